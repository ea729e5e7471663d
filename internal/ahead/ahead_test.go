package ahead

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRunOrder: steps run in order on the calling goroutine; the step
// after each is prepared while it runs (step k waits until prepare k+1
// has begun, which a run that prepared only between steps would never
// do); and prepare is called for step k+2 only once step k has returned.
func TestRunOrder(t *testing.T) {
	const n = 6
	var (
		mu       sync.Mutex
		events   []string
		prepared = make([]chan struct{}, n+2)
		ran      = make([]bool, n)
	)
	for i := range prepared {
		prepared[i] = make(chan struct{})
	}
	log := func(s string) {
		mu.Lock()
		events = append(events, s)
		mu.Unlock()
	}
	k := 0
	err := Run(t.Context(), func() (func() error, error) {
		i := k
		k++
		close(prepared[i])
		if i >= 2 {
			mu.Lock()
			done := ran[i-2]
			mu.Unlock()
			if !done {
				return nil, fmt.Errorf("step %d prepared before step %d returned", i, i-2)
			}
		}
		if i == n {
			return nil, nil
		}
		log(fmt.Sprintf("prepare %d", i))
		return func() error {
			// The next step is prepared while this one runs.
			<-prepared[i+1]
			log(fmt.Sprintf("run %d", i))
			mu.Lock()
			ran[i] = true
			mu.Unlock()
			return nil
		}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	for _, e := range events {
		if e[:3] == "run" {
			runs = append(runs, e)
		}
	}
	want := []string{"run 0", "run 1", "run 2", "run 3", "run 4", "run 5"}
	if !slices.Equal(runs, want) {
		t.Fatalf("steps ran %v, want %v", runs, want)
	}
}

// TestRunStops: a step's error ends the run with no later step run; an
// error of prepare ends it once the steps before it have run, and is
// returned; a cancelled context ends it.
func TestRunStops(t *testing.T) {
	boom := errors.New("boom")
	for _, c := range []struct {
		name      string
		failStep  int // -1: none
		failPrep  int // -1: none
		wantSteps []int
	}{
		{"a step fails", 2, -1, []int{0, 1, 2}},
		{"prepare fails", -1, 3, []int{0, 1, 2}},
		{"the first step fails", 0, -1, []int{0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var ran []int
			k := 0
			err := Run(t.Context(), func() (func() error, error) {
				i := k
				k++
				if i == c.failPrep {
					return nil, boom
				}
				if i == 10 {
					return nil, nil
				}
				return func() error {
					ran = append(ran, i)
					if i == c.failStep {
						return boom
					}
					return nil
				}, nil
			})
			if !errors.Is(err, boom) {
				t.Fatalf("Run: %v, want boom", err)
			}
			if !slices.Equal(ran, c.wantSteps) {
				t.Fatalf("steps %v ran, want %v", ran, c.wantSteps)
			}
		})
	}
	ctx, cancel := context.WithCancel(t.Context())
	var ran int
	err := Run(ctx, func() (func() error, error) {
		return func() error {
			ran++
			if ran == 3 {
				cancel()
			}
			return nil
		}, nil
	})
	if !errors.Is(err, context.Canceled) || ran != 3 {
		t.Fatalf("cancelled after 3 steps: %d ran, %v", ran, err)
	}
}

// TestRunPreparesNothingAfterEnd: once a step has failed, prepare is not
// called again beyond the step being prepared when it failed, even when
// that preparation returns after Run has begun to drain (the preparing
// goroutine's select then finds both the drain and the end ready and
// picks either, so the run is repeated).
func TestRunPreparesNothingAfterEnd(t *testing.T) {
	boom := errors.New("boom")
	for i := range 200 {
		var calls atomic.Int32
		failed := make(chan struct{})
		err := Run(t.Context(), func() (func() error, error) {
			if calls.Add(1) == 2 {
				// Still preparing when the step before fails and Run ends.
				<-failed
				time.Sleep(200 * time.Microsecond)
			}
			return func() error {
				close(failed)
				return boom
			}, nil
		})
		if !errors.Is(err, boom) {
			t.Fatalf("run %d: %v, want boom", i, err)
		}
		if n := calls.Load(); n > 2 {
			t.Fatalf("run %d: prepare called %d times after the first step failed, want at most 2", i, n)
		}
	}
}

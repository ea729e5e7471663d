package hot

import (
	"errors"
	"testing"

	"github.com/meterstore/meterstore/series"
)

// TestPrefetch feeds prefetch a source of n readings and checks that fn
// sees every one once, in order, in chunks, and that an error of either
// side ends the scan with that error.
func TestPrefetch(t *testing.T) {
	source := func(n int, fail error) func([]series.Reading) ([]series.Reading, error) {
		i := 0
		return func(buf []series.Reading) ([]series.Reading, error) {
			for len(buf) < cap(buf) && i < n {
				if fail != nil && i == n/2 {
					return buf, fail
				}
				buf = append(buf, series.Reading{Version: uint64(i)})
				i++
			}
			return buf, nil
		}
	}
	for _, n := range []int{0, 1, 9, 10, 11, 95} {
		var got []uint64
		err := prefetch(10, func(rs []series.Reading) error {
			if len(rs) == 0 || len(rs) > 10 {
				t.Errorf("n=%d: a chunk of %d", n, len(rs))
			}
			for _, r := range rs {
				got = append(got, r.Version)
			}
			return nil
		}, source(n, nil))
		if err != nil || len(got) != n {
			t.Fatalf("n=%d: %d readings, %v", n, len(got), err)
		}
		for i, v := range got {
			if v != uint64(i) {
				t.Fatalf("n=%d: reading %d is %d", n, i, v)
			}
		}
	}
	stop := errors.New("consumer stops")
	calls := 0
	err := prefetch(10, func([]series.Reading) error { calls++; return stop }, source(1000, nil))
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("fn's error: %v after %d calls, want %v after 1", err, calls, stop)
	}
	broken := errors.New("source breaks")
	seen := 0
	err = prefetch(10, func(rs []series.Reading) error { seen += len(rs); return nil }, source(100, broken))
	if !errors.Is(err, broken) || seen > 50 {
		t.Errorf("source's error: %v after %d readings, want %v after at most 50", err, seen, broken)
	}
}

package lifecycle

import (
	"errors"
	"testing"
	"time"
)

// TestGroup: the first actor to return interrupts the others, the
// interrupts run side by side, and run returns every error, the actors'
// first, each in the order the actors were added.
func TestGroup(t *testing.T) {
	var g group
	stopping := 0
	g.stopping = func() { stopping++ }
	// The first returns at once, failing.
	g.add(func() error { return errors.New("a failed") }, func() error { return nil })
	// The second runs until interrupted, and stops only once the third's
	// interrupt has run: interrupts one after the other would never end.
	stopped, quit := make(chan struct{}), make(chan struct{})
	g.add(func() error { <-stopped; return nil }, func() error {
		<-quit
		close(stopped)
		return errors.New("b stopped late")
	})
	g.add(func() error { <-quit; return errors.New("c ended") }, func() error { close(quit); return nil })
	ran := make(chan error, 1)
	go func() { ran <- g.run() }()
	select {
	case err := <-ran:
		if err == nil || err.Error() != "a failed\nc ended\nb stopped late" {
			t.Errorf("run: %q", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return: the interrupts ran one after the other")
	}
	if stopping != 1 {
		t.Errorf("stopping called %d times", stopping)
	}
	if err := (&group{}).run(); err != nil {
		t.Errorf("an empty group: %v", err)
	}
}

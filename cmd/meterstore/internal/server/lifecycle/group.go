package lifecycle

import (
	"errors"
	"sync"
)

// A group runs actors, each a function that runs until its interrupt
// stops it, in the spirit of Prometheus's run.Group
// (github.com/oklog/run): when the first actor returns, every interrupt
// is called and the group waits for every actor. Unlike oklog/run, the
// interrupts run at once, side by side, each taking its time to stop
// what it interrupts (within the server's shutdown timeout) and saying
// why it could not; and run returns every error, joined, rather than the
// first actor's alone: a server that stops reports each part that did not
// stop in time.
type group struct {
	actors []actor
	// stopping, if set, is called once the first actor has returned,
	// before the interrupts.
	stopping func()
}

// An actor is one part of the group: execute runs it, interrupt stops it
// and returns when it is stopped or could not be in time.
type actor struct {
	execute   func() error
	interrupt func() error
}

// add makes execute and interrupt an actor of the group.
func (g *group) add(execute, interrupt func() error) {
	g.actors = append(g.actors, actor{execute, interrupt})
}

// run runs every actor until the first returns, then interrupts them all
// and waits for them. Its error joins the actors' errors, in the order
// they were added, then the interrupts', in the same order.
func (g *group) run() error {
	if len(g.actors) == 0 {
		return nil
	}
	type result struct {
		i   int
		err error
	}
	done := make(chan result, len(g.actors))
	for i, a := range g.actors {
		go func() { done <- result{i, a.execute()} }()
	}
	executed := make([]error, len(g.actors))
	first := <-done
	executed[first.i] = first.err
	if g.stopping != nil {
		g.stopping()
	}
	interrupted := make([]error, len(g.actors))
	var wg sync.WaitGroup
	for i, a := range g.actors {
		wg.Go(func() { interrupted[i] = a.interrupt() })
	}
	for range len(g.actors) - 1 {
		r := <-done
		executed[r.i] = r.err
	}
	wg.Wait()
	return errors.Join(append(executed, interrupted...)...)
}

// Package ahead prepares the next step of a sequence while the step
// before it is carried out: the client's share of a write (decoding,
// checking, encoding a batch) overlaps the server's share of the one
// before it, while the writes themselves stay one after another, in order.
package ahead

import "context"

// Run carries out, in order and on the calling goroutine, the steps that
// prepare returns, until prepare returns a nil step, which ends the run,
// or an error, which Run returns once every step before it has run. A
// step's error ends the run and is returned; so is ctx's error once the
// steps have ended.
//
// prepare runs on a goroutine of its own, one step ahead: it prepares
// step k+1 while step k runs, and is called for step k+2 only once step k
// has returned, so at most two steps are in flight and whatever step k
// holds may be reused from then on. prepare is never called concurrently
// with itself, nor after Run has returned.
func Run(ctx context.Context, prepare func() (step func() error, err error)) error {
	type prepared struct {
		step func() error
		err  error
	}
	stop, cancel := context.WithCancel(ctx)
	ready := make(chan prepared) // unbuffered: one step prepared ahead, no more
	go func() {
		defer close(ready)
		for {
			step, err := prepare()
			if step == nil && err == nil {
				return
			}
			select {
			case ready <- prepared{step, err}:
			case <-stop.Done():
				return
			}
			// Run drains ready once it has cancelled stop, so a send can
			// succeed after the run has ended: nothing more is prepared then.
			if err != nil || stop.Err() != nil {
				return
			}
		}
	}()
	// The preparing goroutine ends before Run returns: it may be inside
	// prepare, which belongs to the caller.
	defer func() {
		cancel()
		for range ready {
		}
	}()
	for p := range ready {
		if p.err != nil {
			return p.err
		}
		if err := p.step(); err != nil {
			return err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return ctx.Err()
}

package httpapi

import "context"

// A gate lets at most cap(g) holders through at once; the others wait
// their turn, first come first served (a channel serves its blocked
// senders in order). A nil gate lets everyone through.
type gate chan struct{}

// enter waits for a place, or until ctx ends.
func (g gate) enter(ctx context.Context) error {
	if g == nil {
		return nil
	}
	select {
	case g <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// leave gives up the place enter took.
func (g gate) leave() {
	if g != nil {
		<-g
	}
}

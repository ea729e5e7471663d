package blob

import (
	"context"
	"errors"
)

// A Flaw is a broken PutIfAbsent that Break installs, so that tests can
// show the race test tells it from a correct one.
type Flaw int

const (
	// Unconditional writes without a precondition: what a driver that
	// drops the precondition, or a store that ignores it, does.
	Unconditional Flaw = iota + 1
	// CheckThenPut reads the key and writes if it was absent: the race
	// left open by a precondition evaluated apart from the write.
	CheckThenPut
)

func (f Flaw) String() string {
	switch f {
	case Unconditional:
		return "unconditional"
	case CheckThenPut:
		return "check-then-put"
	}
	return "none"
}

// Break replaces the PutIfAbsent of b's driver with the flawed variant f.
func Break(b *Bucket, f Flaw) { b.d = flawed{driver: b.d, flaw: f} }

type flawed struct {
	driver
	flaw Flaw
}

func (f flawed) putIfAbsent(ctx context.Context, key string, data []byte) error {
	if f.flaw == CheckThenPut {
		_, err := f.get(ctx, key)
		if err == nil {
			return ErrExists
		}
		if !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	return f.put(ctx, key, data)
}

package hot

import (
	"context"

	"github.com/meterstore/meterstore/series"
)

// Writing a stream of batches.
//
// A delivery of many batches spends much of its time in the client:
// decoding a batch, checking its rows and converting them for the copy.
// WriteEach does that for the next batch on a goroutine of its own while
// the batch before it is being written, so the client's work overlaps the
// server's. Two batches at most are in flight: the one being written and
// the one being decoded and prepared, which, once prepared, waits until
// the write before it has ended.
//
// The writes themselves stay one after another, each atomic in a
// transaction of its own that begins only once the previous one has
// committed or rolled back. A batch's outcomes are therefore decided
// against every row of the batches before it that was written and none
// of a batch that failed: they are the outcomes of writing the batches
// one by one with Write, under the same per-series locks against other
// writers.

// WriteEach writes, in order, the batches next returns until it returns
// no rows, each atomically as Write does, and passes each batch's result
// or error to done, in order. It returns the first error of next or of
// done; done decides whether a failed batch ends the stream, by returning
// an error, or not. While a batch is written, next and the checks of the
// following batch run on another goroutine; next is never called
// concurrently with itself, nor after WriteEach has returned.
func (h *Tier) WriteEach(ctx context.Context, t *series.Table, next func() ([]series.Reading, error), done func(series.Result, error) error) error {
	type prepared struct {
		b   *batch
		err error // of the checks: the batch's error
		end error // of next: the stream's
	}
	ctx, cancel := context.WithCancel(ctx)
	ready := make(chan prepared) // unbuffered: one batch prepared ahead, no more
	go func() {
		defer close(ready)
		for {
			rows, err := next()
			var p prepared
			switch {
			case err != nil:
				p.end = err
			case len(rows) == 0:
				return
			default:
				if p.b, p.err = h.prepareWrite(t, rows, WriteOptions{}); p.err == nil {
					h.encodeAhead(t, p.b)
				}
			}
			select {
			case ready <- p:
			case <-ctx.Done():
				return
			}
			if p.end != nil {
				return
			}
		}
	}()
	// The preparing goroutine ends before WriteEach returns: it may be
	// inside next, which belongs to the caller.
	defer func() {
		cancel()
		for range ready {
		}
	}()
	for p := range ready {
		if p.end != nil {
			return p.end
		}
		res, err := series.Result{}, p.err
		if err == nil {
			res, err = h.writePrepared(ctx, t, p.b, nil)
		}
		if err := done(res, err); err != nil {
			return err
		}
	}
	return ctx.Err()
}

package store

import (
	"context"

	"github.com/meterstore/meterstore/internal/ahead"
	"github.com/meterstore/meterstore/internal/hot"
)

// WriteEach writes to table name, in order, the batches next returns
// until it returns no rows, each as WriteWith writes it with o, and
// passes each batch's result and error to done, in order. It returns the
// first error of next or of done: done decides, by returning an error or
// not, whether a failed batch ends the stream. Each batch is written
// only once done has returned for the one before it, so a stream that
// stops at a failed batch writes nothing after it.
//
// A delivery of many batches spends much of its time in the client:
// while a batch is written, next is called for the following one, whose
// checks and conversion for the hot tier's copy then run too, on another
// goroutine. The stream's first batch, a batch with rows below the
// watermark, and the table's first batch since the store opened, are
// prepared in their turn instead, as WriteWith does. Two batches at most are in flight: next is called again
// only once done has returned for the batch two back, so the rows it
// returned then may be reused; it is never called concurrently with
// itself, nor after WriteEach has returned.
func (s *Store) WriteEach(ctx context.Context, name string, next func() ([]Reading, error), done func(WriteResult, error) error, o WriteOptions) error {
	first := true
	return ahead.Run(ctx, func() (func() error, error) {
		rows, err := next()
		if err != nil || len(rows) == 0 {
			return nil, err
		}
		if first {
			// No write runs while the first batch would be prepared:
			// written as WriteWith writes it, its checks overlap the
			// beginning of its transaction instead.
			first = false
			return func() error { return done(s.WriteWith(ctx, name, rows, o)) }, nil
		}
		w := s.admitWrite(ctx, name, rows, o)
		if w.err != nil {
			return func() error { return done(w.early, w.err) }, nil
		}
		b := s.router.Prepare(w.decl, w.ct, w.rows, hot.WriteOptions{Substitute: o.Substitute})
		return func() error {
			routed, err := b.Write(ctx)
			return done(s.account(ctx, name, WriteResult(routed), err))
		}, nil
	})
}

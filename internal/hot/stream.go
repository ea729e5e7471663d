package hot

import (
	"context"

	"github.com/meterstore/meterstore/internal/ahead"
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
	first := true
	return ahead.Run(ctx, func() (func() error, error) {
		rows, err := next()
		if err != nil || len(rows) == 0 {
			return nil, err
		}
		if first {
			// No write runs while the first batch would be prepared:
			// written as Write writes it, its checks overlap the
			// beginning of its transaction instead.
			first = false
			return func() error { return done(h.Write(ctx, t, rows)) }, nil
		}
		p, err := h.Prepare(t, rows, WriteOptions{})
		return func() error {
			if err != nil {
				return done(series.Result{}, err)
			}
			return done(h.WritePrepared(ctx, p))
		}, nil
	})
}

// A Prepared batch has had the client's share of its write done, the
// checks and the conversion for the copy, and awaits WritePrepared.
type Prepared struct {
	t *series.Table
	b *batch
}

// Prepare does the client's share of writing rows to t with o, which
// needs no connection: what WriteWith would refuse before it connects is
// refused here, with the same error. A stream of writes prepares the next
// batch while the one before it is written (WriteEach).
func (h *Tier) Prepare(t *series.Table, rows []series.Reading, o WriteOptions) (*Prepared, error) {
	b, err := h.prepareWrite(t, rows, o)
	if err != nil {
		return nil, err
	}
	h.encodeAhead(t, b)
	return &Prepared{t: t, b: b}, nil
}

// WritePrepared writes a batch Prepare prepared, atomically in a
// transaction of its own, and returns what WriteWith returns for it. A
// Prepared batch is written once.
func (h *Tier) WritePrepared(ctx context.Context, p *Prepared) (series.Result, error) {
	return h.writePrepared(ctx, p.t, p.b, nil)
}

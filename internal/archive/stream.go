package archive

import (
	"context"
	"errors"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/series"
)

// Writing a stream of batches.
//
// A stream prepares a batch while the one before it is written (the
// store's WriteEach): Prepare routes it by the watermark last read and,
// when every row belongs to the hot tier, does the hot tier's share of the
// write that needs no connection. The write itself waits for its turn.
// Routing ahead is safe for the reason routing by a stale W is: a row that
// an archival moved below W meanwhile finds no attached partition, and
// the write routes the batch again as Write does.
//
// A batch with rows below W, or of a table whose W was not read yet, is
// prepared by nothing and written by WriteWith in its turn: late
// corrections are rare, and their cold append must not begin before the
// batch before them is written, since a stream stops at its first failed
// batch.

// A Routed batch is one Prepare made ready to be written.
type Routed struct {
	rt   *Router
	t    *series.Table
	ct   *cold.Table
	rows []series.Reading
	o    hot.WriteOptions
	hot  *hot.Prepared // nil: written by WriteWith
	err  error         // of hot.Tier.Prepare: the batch's error
}

// Prepare routes rows of table t, whose cold table is ct, by the
// watermark last read and prepares their hot write if every row belongs
// to the hot tier. It reads nothing: what it cannot decide, Write does.
func (rt *Router) Prepare(t *series.Table, ct *cold.Table, rows []series.Reading, o hot.WriteOptions) *Routed {
	b := &Routed{rt: rt, t: t, ct: ct, rows: rows, o: o}
	rt.mu.Lock()
	m, known := rt.marks[t.Name]
	rt.mu.Unlock()
	if !known {
		return b
	}
	for i := range rows {
		if m.ok && rows[i].From.Before(m.w) {
			return b
		}
	}
	b.hot, b.err = rt.hot.Prepare(t, rows, o)
	return b
}

// Write writes the batch as WriteWith would, with the same results and
// errors: a batch Prepare prepared for the hot tier whose partitions are
// missing, detached or being archived is written by WriteWith, which
// creates them or routes the rows again; the failed attempt wrote
// nothing.
func (b *Routed) Write(ctx context.Context) (WriteResult, error) {
	if b.hot == nil && b.err == nil {
		return b.rt.WriteWith(ctx, b.t, b.ct, b.rows, b.o)
	}
	res := WriteResult{Result: series.Result{Status: make([]series.Status, len(b.rows))}}
	if b.err != nil {
		return res, b.err
	}
	hr, err := b.rt.hot.WritePrepared(ctx, b.hot)
	switch {
	case errors.Is(err, hot.ErrNoPartition):
		return b.rt.WriteWith(ctx, b.t, b.ct, b.rows, b.o)
	case err != nil:
		return res, err
	}
	for i, s := range hr.Status {
		res.Status[i] = s
		res.Count(s)
	}
	res.Versions = hr.Versions
	return res, nil
}

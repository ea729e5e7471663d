package store

import (
	"context"
	"fmt"

	"github.com/meterstore/meterstore/internal/archive"
	"github.com/meterstore/meterstore/series"
)

// WriteResult reports per row whether it was inserted or already present,
// and how many rows went to the cold tier as late corrections.
type WriteResult = archive.WriteResult

// Write stores rows in table name. Rows whose interval starts below the
// watermark go to the cold tier as one append, the rest to PostgreSQL as
// one atomic batch; a bad row fails its part with an error naming it.
// Redelivering identical rows is a no-op, so retrying a failed call is
// safe.
//
// A row for a day without a partition gets one, unless the day lies more
// than HotOptions.AcceptAhead past now (InvalidInput, naming the row). The
// watermark routed by is the last one read, so rows at or above it are
// stored while the cold tier is unreachable; a batch with rows below it
// then fails whole, retryably, with an error wrapping ErrColdUnreachable.
//
// A quarantine refuses no delivery PostgreSQL can hold. A table whose
// declared change of columns the hot tier refused takes every batch its
// stored columns hold, once the declaration accepts it too; one they
// cannot hold (a column it does not have, an identity value it lacks) is
// refused as retryable, wrapping the *QuarantineError, and so is a late
// correction into a quarantined cold tier: either goes through once an
// operator has resolved the quarantine.
func (s *Store) Write(ctx context.Context, name string, rows []Reading) (WriteResult, error) {
	t, ct, _, err := s.opened(ctx, name)
	if err != nil {
		return WriteResult{}, err
	}
	decl, quarantine := t.running()
	if quarantine != nil {
		if err := admit(t.decl, decl, quarantine, rows); err != nil {
			return WriteResult{}, err
		}
	}
	res, err := s.router.Write(ctx, decl, ct, rows)
	s.metrics.Written(ctx, name, int64(res.Inserted), int64(res.Present))
	if res.Late > 0 {
		s.metrics.LateCorrections(ctx, name, int64(res.Late))
	}
	return res, err
}

// admit checks the columns of rows for a table quarantined by quarantine,
// declared as decl and stored as stored: a row decl refuses fails the
// batch as InvalidInput, as it would without the quarantine; one whose
// columns stored cannot hold fails it as Unavailable, retryable.
func admit(decl, stored *series.Table, quarantine error, rows []Reading) error {
	var bad, held series.Problems
	for i := range rows {
		if err := decl.CheckColumns(&rows[i]); err != nil {
			bad.Add(i, "%v", err)
		} else if err := stored.CheckColumns(&rows[i]); err != nil {
			held.Add(i, "%v, as the table is stored", err)
		}
	}
	if err := bad.Err(series.InvalidInput, "write", decl.Name); err != nil {
		return err
	}
	if err := held.Err(series.Unavailable, "write", decl.Name); err != nil {
		e := err.(*series.Error)
		e.Err = fmt.Errorf("its stored columns cannot hold these rows until an operator resolves the quarantine; retry then: %w", quarantine)
		return e
	}
	return nil
}

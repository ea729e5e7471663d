package store

import (
	"context"

	"github.com/meterstore/meterstore/internal/archive"
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
func (s *Store) Write(ctx context.Context, name string, rows []Reading) (WriteResult, error) {
	t, ct, _, err := s.opened(ctx, name)
	if err != nil {
		return WriteResult{}, err
	}
	res, err := s.router.Write(ctx, t.decl, ct, rows)
	s.metrics.Written(ctx, name, int64(res.Inserted), int64(res.Present))
	if res.Late > 0 {
		s.metrics.LateCorrections(ctx, name, int64(res.Late))
	}
	return res, err
}

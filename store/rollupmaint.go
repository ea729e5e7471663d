package store

import (
	"context"
	"errors"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/series"
)

// rollupOrphans runs Orphans, with opts, on the daily rollup table of t,
// an interval table whose cold handle is ct; a table without a rollup has
// none.
func (s *Store) rollupOrphans(ctx context.Context, t *table, ct *cold.Table, opts cold.OrphanOptions) (cold.OrphanReport, error) {
	if t.decl.TimeModel != series.Interval {
		return cold.OrphanReport{}, nil
	}
	r, err := s.cold.Orphans(ctx, s.cold.RollupHandle(ct), opts)
	if errors.Is(err, icecatalog.ErrNoSuchTable) || errors.Is(err, icecatalog.ErrNoSuchNamespace) {
		return cold.OrphanReport{}, nil
	}
	return r, err
}

// addOrphans returns the report of a and b together.
func addOrphans(a, b cold.OrphanReport) cold.OrphanReport {
	a.Orphans = append(a.Orphans, b.Orphans...)
	a.Deleted += b.Deleted
	a.DeletedBytes += b.DeletedBytes
	a.Young += b.Young
	a.YoungFiles = append(a.YoungFiles, b.YoungFiles...)
	a.Live += b.Live
	a.Kept = append(a.Kept, b.Kept...)
	return a
}

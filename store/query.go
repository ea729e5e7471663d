package store

import (
	"context"
	"time"

	"github.com/meterstore/meterstore/internal/query"
)

// A Result is the answer of Query: its rows, and the watermark and tiers
// it was computed with.
type Result = query.Result

// Query runs one read-only SQL statement over table name's readings in
// both tiers: `readings` (per merge key the highest version, then the
// latest recorded_at) and `readings_versions` (every version), and the
// system tables as last refreshed. Rows below the watermark come from
// Iceberg, the rest from PostgreSQL.
func (s *Store) Query(ctx context.Context, name, sql string) (*Result, error) {
	_, _, engine, err := s.opened(ctx, name)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	res, err := engine.Query(ctx, sql)
	s.metrics.Queried(ctx, name, time.Since(start))
	return res, err
}

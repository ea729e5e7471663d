package store

import (
	"context"
	"time"

	"github.com/meterstore/meterstore/internal/query"
)

// A Result is the answer of Query: its rows, and the watermark and tiers
// it was computed with.
type Result = query.Result

// A ResultHeader describes the answer of a query before its first row:
// its columns, and the watermark and tiers it is computed with.
type ResultHeader = query.Header

// ErrInvalidQuery fails a query whose SQL DuckDB cannot parse or bind: a
// syntax error, an unknown column, table or function. It is not retryable.
var ErrInvalidQuery = query.ErrInvalidQuery

// Query runs one read-only SQL statement over table name's readings in
// both tiers: `readings` (per merge key the highest version, then the
// latest recorded_at) and `readings_versions` (every version), and the
// system tables as last refreshed. Rows below the watermark come from
// Iceberg, the rest from PostgreSQL. The result is held in memory, within
// QueryOptions.MaxRows and MaxResultBytes.
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

// QueryStream runs sql as Query does but holds none of its rows: it calls
// start once with the header, before the first row, then row once a row,
// in a slice row must not keep. MaxRows and MaxResultBytes do not apply;
// QueryOptions.Timeout and ctx bound the whole stream. An error from start
// or row ends the query and is returned unchanged.
func (s *Store) QueryStream(ctx context.Context, name, sql string, start func(*ResultHeader) error, row func([]any) error) error {
	_, _, engine, err := s.opened(ctx, name)
	if err != nil {
		return err
	}
	begin := time.Now()
	err = engine.Stream(ctx, sql, start, row)
	s.metrics.Queried(ctx, name, time.Since(begin))
	return err
}

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
// its columns, and the watermark, tiers, cold snapshot and recorded_at
// ceiling it is computed with.
type ResultHeader = query.Header

// A TableRead says how a query read one table it names: its watermark,
// tiers, cold snapshot and range (ResultHeader.Tables).
type TableRead = query.TableRead

// ErrInvalidQuery fails a query whose SQL DuckDB cannot parse or bind: a
// syntax error, an unknown column, table or function, a <table>.readings
// of a table that is not declared. It is not retryable.
var ErrInvalidQuery = query.ErrInvalidQuery

// Query runs one read-only SQL statement over table name's readings in
// both tiers: `readings` (per merge key the highest version, then the
// latest recorded_at) and `readings_versions` (every version), and the
// system tables as last refreshed. Rows below the watermark come from
// Iceberg, the rest from PostgreSQL. The statement may read other declared
// tables too, as `<table>.readings` and `<table>.readings_versions`, each
// split at its own watermark; ResultHeader.Tables reports each. The result
// is held in memory, within QueryOptions.MaxRows and MaxResultBytes.
func (s *Store) Query(ctx context.Context, name, sql string) (*Result, error) {
	return s.QueryAt(ctx, name, sql, ReadOptions{})
}

// ReadOptions choose the state of the tiers a query reads: the current one
// (the zero value), as of a past cold snapshot, as known at a transaction
// time (a recorded_at ceiling), or both. The result header reports the
// snapshot, watermark and ceiling read.
type ReadOptions = query.ReadOptions

// ErrNoSnapshot fails a read as of a snapshot the cold tier does not have
// (any more): an unknown or expired ID, or a time before the first kept.
var ErrNoSnapshot = query.ErrNoSnapshot

// QueryAt runs sql as Query does, reading the tiers as opts says.
func (s *Store) QueryAt(ctx context.Context, name, sql string, opts ReadOptions) (*Result, error) {
	_, _, engine, err := s.opened(ctx, name)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	res, err := engine.QueryAt(ctx, sql, opts)
	s.metrics.Queried(ctx, name, time.Since(start))
	return res, err
}

// QueryStream runs sql as Query does but holds none of its rows: it calls
// start once with the header, before the first row, then row once a row,
// in a slice row must not keep. MaxRows and MaxResultBytes do not apply;
// QueryOptions.Timeout and ctx bound the whole stream. An error from start
// or row ends the query and is returned unchanged.
func (s *Store) QueryStream(ctx context.Context, name, sql string, start func(*ResultHeader) error, row func([]any) error) error {
	return s.QueryStreamAt(ctx, name, sql, ReadOptions{}, start, row)
}

// QueryStreamAt runs sql as QueryStream does, reading the tiers as opts
// says.
func (s *Store) QueryStreamAt(ctx context.Context, name, sql string, opts ReadOptions, start func(*ResultHeader) error, row func([]any) error) error {
	st, err := s.Prepare(ctx, name, sql, opts, nil)
	if err != nil {
		return err
	}
	return st.Stream(ctx, start, row)
}

// A ForbiddenError refuses a statement that reads tables its caller may not
// read; it names them.
type ForbiddenError = query.ForbiddenError

// A Statement is a query that Prepare has analysed and authorised, and
// that has read nothing yet. It streams once; Close releases it whether it
// ran or not.
type Statement struct {
	s    *Store
	name string
	st   *query.Statement
}

// Prepare analyses sql, run over table name as Query runs it, into the
// tables it reads, and checks each with may before anything of any tier
// is read: a statement that reads a table may refuses fails with a
// *ForbiddenError, whatever that table holds, so that the refusal cannot
// tell anything of the data. A nil may allows every table. The system
// tables the statement sees show only the rows of the tables may allows.
// QueryOptions.Timeout bounds the statement from Prepare to its last row.
func (s *Store) Prepare(ctx context.Context, name, sql string, opts ReadOptions, may func(table string) bool) (*Statement, error) {
	_, _, engine, err := s.opened(ctx, name)
	if err != nil {
		return nil, err
	}
	st, err := engine.Prepare(ctx, sql, opts, may)
	if err != nil {
		return nil, err
	}
	return &Statement{s: s, name: name, st: st}, nil
}

// Tables returns the declared tables the statement reads, the one it was
// prepared over first if it reads it.
func (st *Statement) Tables() []string { return st.st.Tables() }

// Stream runs the statement as QueryStream does: it calls start once with
// the header, before the first row, then row once a row, in a slice row
// must not keep. It releases the statement.
func (st *Statement) Stream(ctx context.Context, start func(*ResultHeader) error, row func([]any) error) error {
	begin := time.Now()
	err := st.st.Stream(ctx, start, row)
	st.s.metrics.Queried(ctx, st.name, time.Since(begin))
	return err
}

// Close releases a statement that will not stream.
func (st *Statement) Close() { st.st.Close() }

package store

import (
	"context"
	"time"

	"github.com/meterstore/meterstore/internal/query"
)

// ErrInvalidQuery fails a query whose SQL DuckDB cannot parse or bind: a
// syntax error, an unknown column, table or function, a <table>.readings
// of a table that is not declared. It is not retryable.
var ErrInvalidQuery = query.ErrInvalidQuery

// Query runs one read-only SQL statement over the deployment with table
// name as its default: `readings` (per merge key the highest version, then
// the latest recorded_at), `readings_versions` (every version) and
// `completeness` of table name, and the system tables. Rows below the
// watermark come from Iceberg, the rest from PostgreSQL. The statement may
// read every other declared table too, as `<table>.readings`, each split at
// its own watermark; ResultHeader.Tables reports each. An empty name makes
// no table the default: every relation names its table. The result is held
// in memory, within QueryOptions.MaxRows and MaxResultBytes.
func (s *Store) Query(ctx context.Context, name, sql string) (*Result, error) {
	return s.QueryAt(ctx, name, sql, ReadOptions{})
}

// ReadOptions choose the state of the tiers a query reads: the current one
// (the zero value), as of a past cold snapshot, as known at a transaction
// time (a recorded_at ceiling), or both. The result header reports the
// snapshot, watermark and ceiling read.
type ReadOptions = query.ReadOptions

// A ReadMode chooses the tiers a query reads (ReadOptions.Mode): both
// (ReadAuto), the cold tier alone with no PostgreSQL connection
// (ReadHistorical), the hot tier alone with no Iceberg round trip
// (ReadOperational). The result header says what each table could not
// see (TableRead.Unseen).
type ReadMode = query.ReadMode

// The read modes; see ReadMode.
const (
	ReadAuto        = query.ReadAuto
	ReadHistorical  = query.ReadHistorical
	ReadOperational = query.ReadOperational
)

// ParseReadMode returns the mode s names: auto (or ""), historical or
// operational.
func ParseReadMode(s string) (ReadMode, error) { return query.ParseReadMode(s) }

// ErrNoSnapshot fails a read as of a snapshot the cold tier does not have
// (any more): an unknown or expired ID, or a time before the first kept.
var ErrNoSnapshot = query.ErrNoSnapshot

// QueryAt runs sql as Query does, reading the tiers as opts says.
func (s *Store) QueryAt(ctx context.Context, name, sql string, opts ReadOptions) (*Result, error) {
	st, err := s.Prepare(ctx, sql, StatementOptions{Table: name, Read: opts})
	if err != nil {
		return nil, err
	}
	return st.Query(ctx)
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
	st, err := s.Prepare(ctx, sql, StatementOptions{Table: name, Read: opts})
	if err != nil {
		return err
	}
	return st.Stream(ctx, start, row)
}

// MaxStatementBytes bounds the text of a statement (1 MiB): Prepare
// refuses a longer one with ErrInvalidQuery, and meterstore query reads no
// more of a file or standard input.
const MaxStatementBytes = query.MaxStatementBytes

// A ForbiddenError refuses a statement that reads tables its caller may not
// read; it names them.
type ForbiddenError = query.ForbiddenError

// ErrUnqualified is wrapped by the refusal of a statement without a
// default table (StatementOptions.Table) that names readings,
// readings_versions or completeness without a table; it wraps
// ErrInvalidQuery.
var ErrUnqualified = query.ErrUnqualified

// StatementOptions say how Prepare takes a statement.
type StatementOptions struct {
	// Table, if set, is the default table: an unqualified readings,
	// readings_versions or completeness reads it. Empty, every relation
	// names its table, as power.readings or gas.completeness.
	Table string
	// Read chooses the state of the tiers the statement reads.
	Read ReadOptions
	// Params are the values of the statement's placeholders: positional
	// ones for $1, $2 or ?, sql.Named ones for $name. They are bound when
	// it runs, never made SQL text; a bound range of "from" or market
	// location bounds what the tiers are read for as a literal does.
	Params []any
	// May, if set, tells which tables the caller may read: a statement
	// that reads another is refused with a *ForbiddenError before anything
	// is read, and the system tables show only the rows of the tables it
	// allows. Nil allows every table.
	May func(table string) bool
}

// A Statement is a query that Prepare has analysed and authorised, and
// that has read nothing yet. It streams once; Close releases it whether it
// ran or not.
type Statement struct {
	s  *Store
	st *query.Statement
}

// Prepare analyses sql, one read-only SQL statement over the deployment,
// into the tables it reads, and checks each with o.May before anything of
// any tier is read: a statement that reads a table May refuses fails with
// a *ForbiddenError, whatever that table holds, so that the refusal cannot
// tell anything of the data. Every declared table is a schema of the
// statement (power.readings, gas.readings_versions, power.completeness);
// o.Table names the default of unqualified relations. QueryOptions.Timeout
// bounds the statement from Prepare to its last row.
func (s *Store) Prepare(ctx context.Context, sql string, o StatementOptions) (*Statement, error) {
	if o.Table == "" && o.Read.AsOfSnapshot != 0 {
		o.Table = s.soleTable(sql)
	}
	if o.Table != "" {
		if _, err := s.table(o.Table); err != nil {
			return nil, err
		}
	}
	system := s.systemTables
	if o.Read.Mode == ReadHistorical {
		// No PostgreSQL connection at all: the system tables as last
		// computed, never anew (their status reads the hot tier).
		system = func(context.Context, bool) []query.Relation { return s.lastSystemTables() }
	}
	po := query.PrepareOptions{Read: o.Read, May: o.May, Table: o.Table, Params: o.Params, System: system, Point: s.pointRead}
	if s.sqlOnly {
		po.Point = nil
	}
	st, err := s.engine.Prepare(ctx, sql, po)
	if err != nil {
		return nil, err
	}
	return &Statement{s: s, st: st}, nil
}

// soleTable returns the one declared table sql names (as power.readings),
// if it names exactly one and no unqualified relation, else "". A snapshot
// ID is one table's: a statement read as of one without a default table
// takes the table it reads as its default, as if it had been named.
func (s *Store) soleTable(sql string) string {
	a, err := query.Extract(sql)
	if err != nil || !a.NoReadings || len(a.Tables) != 1 {
		return "" // Prepare says what is wrong with it
	}
	for name := range a.Tables {
		if _, err := s.table(name); err == nil {
			return name
		}
	}
	return ""
}

// Tables returns the declared tables the statement reads, its default
// table first if it reads it.
func (st *Statement) Tables() []string { return st.st.Tables() }

// Placeholders returns the identifiers of the statement's parameters,
// each once: the positional ones ($1 and ? as "1", $2 as "2") by number,
// then the named ones ($name as "name") by name.
func (st *Statement) Placeholders() []string { return st.st.Placeholders() }

// Small reports whether the statement reads few series of each table it
// reads (at most 16 market locations its WHERE names, or no table) and
// gave a small result when it last ran, if it did: a server may run it
// at once beside large statements rather than in turn with them.
func (st *Statement) Small() bool { return st.st.Small() }

// Stream runs the statement as QueryStream does: it calls start once with
// the header, before the first row, then row once a row, in a slice row
// must not keep. It releases the statement.
func (st *Statement) Stream(ctx context.Context, start func(*ResultHeader) error, row func([]any) error) error {
	begin := time.Now()
	err := st.st.Stream(ctx, func(h *query.Header) error { return start(resultHeader(h)) }, row)
	st.queried(ctx, begin)
	return err
}

// queried records the query's time for every table it read; the typed
// read that answers a point statement has recorded its own.
func (st *Statement) queried(ctx context.Context, begin time.Time) {
	if st.st.Typed() {
		return
	}
	for _, name := range st.st.Tables() {
		st.s.metrics.Queried(ctx, name, time.Since(begin))
	}
}

// Query runs the statement as Store.Query does and returns its rows,
// held in memory within QueryOptions.MaxRows and MaxResultBytes. It
// releases the statement.
func (st *Statement) Query(ctx context.Context) (*Result, error) {
	begin := time.Now()
	res, err := st.st.Query(ctx)
	st.queried(ctx, begin)
	return result(res), err
}

// Close releases a statement that will not stream.
func (st *Statement) Close() { st.st.Close() }

// pointRead answers a point statement (query.Point) with the typed read
// of its series, without DuckDB.
func (s *Store) pointRead(ctx context.Context, p query.Point, o ReadOptions) ([]Reading, TableRead, error) {
	res, err := s.typedRead(ctx, p.Table, SeriesQuery{MaLo: p.MaLo, OBIS: p.OBIS, From: p.From, To: p.To, Identity: p.Identity, Read: o}, false)
	if err != nil {
		return nil, TableRead{}, err
	}
	return res.Readings, res.Read, nil
}

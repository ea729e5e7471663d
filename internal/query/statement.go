package query

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/meterstore/meterstore/series"
)

// A Statement is a statement analysed and not yet run: Prepare has parsed
// it and knows the tables it reads, and nothing of any tier has been read.
// It is how a caller's rights are checked before any row or file is
// touched: the refusal of a
// statement depends on its text alone, never on the data it would read.
// A Statement runs once; Close releases it whether it ran or not.
type Statement struct {
	e        *Engine
	inst     *instance
	a        analysis
	self     string // the table the analysis calls "", if any
	opts     ReadOptions
	params   []any
	uses     []use // the tables it reads, self first
	rels     []Relation
	deadline time.Time // of Settings.Timeout; zero: none
	begin    time.Time
	ran      bool
	ok       bool // it ran to its last row: its duck may be kept
	closed   bool
	point    *pointRun // set if a PointReader answers it
	steps    Timing    // Prepare's steps
}

// ErrForbidden is wrapped by a *ForbiddenError.
var ErrForbidden = errors.New("query: the statement reads a table the caller may not read")

// A ForbiddenError refuses a statement that reads tables the caller may
// not read. It names the tables, which the statement's text names: it
// says nothing of their rows.
type ForbiddenError struct {
	Tables []string
}

func (e *ForbiddenError) Error() string {
	return fmt.Sprintf("query: the statement reads %s, which the caller may not read", strings.Join(e.Tables, ", "))
}

// Unwrap makes a ForbiddenError match ErrForbidden.
func (e *ForbiddenError) Unwrap() error { return ErrForbidden }

// PrepareOptions say how Prepare takes a statement.
type PrepareOptions struct {
	// Read chooses the state of the tiers the statement reads.
	Read ReadOptions
	// May, if set, tells which tables the caller may read; a statement
	// that reads another is refused. Nil allows every table.
	May func(table string) bool
	// Table, if set, is the statement's default table: an unqualified
	// readings, readings_versions, completeness or daily reads it.
	// Without it, every relation of the tiers must name its table, as
	// power.readings.
	Table string
	// Params are the values of the statement's placeholders: positional
	// ones for $1, $2 or ?, sql.Named ones for $name. They are bound when
	// it runs, never made SQL text, and the analysis takes them as the
	// constants they are, so that a bound range bounds what the tiers
	// are read for.
	Params []any
	// Point, if set, answers a point statement (see Point) without
	// DuckDB; nil, DuckDB runs every statement.
	Point PointReader
	// System, if set, gives the in-memory relations (SetRelations' by
	// default): fresh is set when the statement names the schema system,
	// so that the caller may compute them anew first.
	System func(ctx context.Context, fresh bool) []Relation
}

// MaxStatementBytes bounds the text of a statement: Prepare refuses a
// longer one as invalid before DuckDB parses it, so that a statement's
// text costs the process a bounded amount whoever sends it.
const MaxStatementBytes = 1 << 20

// ErrUnqualified is wrapped by the refusal of a statement without a
// default table that names a relation of the tiers without its table.
var ErrUnqualified = fmt.Errorf("%w: name the table of readings, readings_versions and completeness, as in power.readings", ErrInvalidQuery)

// Prepare analyses sql into the tables it reads and checks them with
// o.May, reading nothing of any tier: a statement that reads a table May
// refuses fails with a *ForbiddenError, whatever that table holds. The
// system relations the statement sees hold only the rows of the tables May
// allows. Every declared table is a schema of the statement, as
// power.readings; o.Table, if set, is the default of unqualified
// relations. Settings.Timeout bounds the statement
// from Prepare to its last row. A statement that is not a single SELECT
// fails with an error wrapping ErrNotReadOnly, one DuckDB cannot parse or
// one longer than MaxStatementBytes with ErrInvalidQuery; a table name that is no declared table is invalid,
// but only once May has allowed it, so that a caller learns no name it may
// not read.
func (e *Engine) Prepare(ctx context.Context, sql string, o PrepareOptions) (*Statement, error) {
	if len(sql) > MaxStatementBytes {
		return nil, fmt.Errorf("%w: the statement has %d bytes, more than the %d (1 MiB) a statement may have",
			ErrInvalidQuery, len(sql), MaxStatementBytes)
	}
	if err := o.Read.check(); err != nil {
		return nil, err
	}
	st := &Statement{e: e, opts: o.Read, begin: time.Now()}
	st.inst = &instance{take: e.spare.take, took: func(d time.Duration) { st.steps.Steps = append(st.steps.Steps, Step{StepInstance, d}) }}
	if e.set.Timeout > 0 {
		st.deadline = st.begin.Add(e.set.Timeout)
	}
	err := st.within(ctx, func(ctx context.Context) error {
		if err := st.prepare(ctx, sql, o); err != nil {
			return err
		}
		switch {
		case st.point != nil:
			if st.inst.duck != nil {
				// Taken for the analysis alone.
				e.spare.retire(st.inst)
			}
			st.inst = nil
		case st.point == nil:
			st.inst.columns = st.a.columns
		}
		return nil
	})
	if err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// prepare analyses sql with o.Table as its default, or for the one
// table whose completeness sql reads when it has no unqualified relation:
// the analysis bounds the days of its default table's completeness.
func (st *Statement) prepare(ctx context.Context, sql string, o PrepareOptions) error {
	e := st.e
	st.self = o.Table
	begin := time.Now()
	defer func() { st.steps.step(StepAnalysis, begin) }()
	a, err := e.analyze(ctx, st.conn, sql, o.Table, o.Params)
	if err != nil {
		return err
	}
	if len(a.completenessOf) == 1 && !a.unqualified && !a.completenessIn[""] {
		name := a.completenessOf[0]
		if err := authorise(append([]string{name}, a.tables()...), o.May); err != nil {
			return err
		}
		if _, err := e.table(ctx, name); err != nil {
			return err
		}
		if a, err = e.analyze(ctx, st.conn, sql, name, o.Params); err != nil {
			return err
		}
		st.self = name
	}
	if st.self == "" && (a.unqualified || !a.NoReadings) {
		return ErrUnqualified
	}
	if len(a.unbound) > 0 && o.Params != nil {
		return unbound(a.unbound)
	}
	if len(a.unused) > 0 {
		return unusedParams(a.unused)
	}
	st.a, st.params = a, o.Params
	if err := authorise(st.Tables(), o.May); err != nil {
		return err
	}
	if o.Read.AsOfSnapshot != 0 && len(a.Tables) > 0 {
		// A snapshot ID is one table's; a time means the same to all.
		return fmt.Errorf("%w: as of snapshot %d: a snapshot is one table's, and the statement reads %s: read it as of a time, or name one table alone as its default",
			ErrInvalidQuery, o.Read.AsOfSnapshot, strings.Join(st.Tables(), ", "))
	}
	if st.uses, err = st.tablesRead(ctx); err != nil {
		return err
	}
	rels := e.relations()
	if o.System != nil {
		rels = o.System(ctx, a.system)
	}
	st.rels = visibleRelations(rels, o.May)
	st.point = st.pointRead(o.Point)
	return nil
}

// conn returns the connection of the statement's duck, taking the spare
// one first if it has none yet: a statement that is answered without
// DuckDB, and found analysed, takes none.
func (st *Statement) conn(ctx context.Context) (querier, error) {
	if err := st.inst.need(ctx); err != nil {
		return nil, err
	}
	return st.inst.conn, nil
}

// tablesRead returns the tables the statement reads and how, its default
// first.
func (st *Statement) tablesRead(ctx context.Context) ([]use, error) {
	a := st.a
	var out []use
	for _, name := range st.Tables() {
		t, err := st.e.table(ctx, name)
		if err != nil {
			return nil, err
		}
		u := use{name: name, t: t, r: a.Tables[name], versions: !a.skipVersions, daily: a.daily[name], completeness: a.completenessIn[name]}
		if name == st.self && !a.NoReadings {
			u.r, u.daily, u.completeness = a.Range, a.daily[""], a.completenessIn[""]
			u.dailyOnly, u.days = a.dailyOnly, a.days
		}
		out = append(out, u)
	}
	return out, nil
}

// authorise refuses tables unless may allows each.
func authorise(tables []string, may func(string) bool) error {
	if may == nil {
		return nil
	}
	var refused []string
	for _, name := range tables {
		if !may(name) && !slices.Contains(refused, name) {
			refused = append(refused, name)
		}
	}
	if len(refused) > 0 {
		return &ForbiddenError{Tables: refused}
	}
	return nil
}

// Placeholders returns the identifiers of the statement's parameters,
// each once: the positional ones ($1 and ? as "1", $2 as "2") by number,
// then the named ones ($name as "name") by name.
func (st *Statement) Placeholders() []string { return st.a.placeholders }

// Typed reports whether the statement is a point statement its
// PointReader answers, without DuckDB.
func (st *Statement) Typed() bool { return st.point != nil }

// Tables returns the declared tables the statement reads: its default
// first if it reads it, then the others it names, by name.
func (st *Statement) Tables() []string {
	var out []string
	if st.self != "" && !st.a.NoReadings {
		out = append(out, st.self)
	}
	return append(out, st.a.tables()...)
}

// A TableRange is the range of "from" a statement may read of one table
// (a zero bound open), and its market locations if it names them: what it
// reads of the table's tiers.
type TableRange struct {
	Table string
	Range series.Range
}

// Ranges returns, for each table the statement reads in the order of
// Tables, the range its analysis bounds, with the values of its
// parameters taken as the constants they are.
func (st *Statement) Ranges() []TableRange {
	out := make([]TableRange, len(st.uses))
	for i, u := range st.uses {
		out[i] = TableRange{Table: u.name, Range: u.r}
	}
	return out
}

// Stream runs the statement, holding none of its rows: it reads the tiers
// of the tables it reads, calls start once with the header, before the
// first row, then row once a row. The values are as duckdb-go returns
// them, in a slice that row must not keep: it is reused for the next row.
// An error from start or row ends the query, and Stream returns it
// unchanged. A Statement streams once: when Stream returns, its DuckDB
// instance and spill directory are gone. Settings.MaxRows and
// MaxResultBytes do not apply; Settings.Timeout and ctx bound the whole
// stream, the calls of row included. A query that outlasts
// Settings.Timeout fails with an error wrapping ErrTimeout.
//
// DuckDB computes the result in full before the first row, into a
// temporary table within Settings.MemoryLimit that spills into
// Settings.CacheDir (duckdb-go would hold a query's result whole in memory,
// past any limit), and the rows are read from it a page at a time: about
// 8 MiB of values, or one row where it holds more, each row measured
// inside DuckDB before it is read. A value of more than 64 MiB or a row of
// more than 128 MiB fails with ErrResultTooLarge. Without a CacheDir, a
// result larger than MemoryLimit fails.
func (st *Statement) Stream(ctx context.Context, start func(*Header) error, row func([]any) error) error {
	if st.ran || st.closed {
		return errors.New("query: the statement has run or is closed")
	}
	st.ran = true
	defer st.Close()
	if st.point != nil {
		return st.within(ctx, func(ctx context.Context) error { return st.streamPoint(ctx, start, row) })
	}
	err := st.within(ctx, func(ctx context.Context) error { return st.stream(ctx, start, row) })
	st.ok = err == nil
	return err
}

// Query runs the statement as Stream does and returns its rows, held in
// memory within Settings.MaxRows and Settings.MaxResultBytes.
func (st *Statement) Query(ctx context.Context) (*Result, error) {
	c := collector{lim: limits{rows: st.e.maxRows(), bytes: st.e.maxResultBytes()}}
	if err := st.Stream(ctx, c.start, c.row); err != nil {
		return nil, err
	}
	return &c.res, nil
}

// Close releases the statement's duck: kept for the next statement
// locked down alike if the statement ran to its end and may leave it
// (see keep.go), otherwise closed with its spill directory in the
// background. Engine.Close waits for either.
func (st *Statement) Close() {
	st.closed = true
	inst := st.inst
	if inst == nil {
		return
	}
	st.inst = nil
	if st.ok && inst.duck != nil && inst.keepable {
		d := inst.duck
		inst.duck = nil
		st.e.keep(d)
	}
	// What is left, and what runs after the statement (instance.after).
	st.e.spare.retire(inst)
}

// within runs fn under the statement's deadline, saying which bound ended
// it when the deadline, not the caller, did.
func (st *Statement) within(ctx context.Context, fn func(context.Context) error) error {
	if st.deadline.IsZero() {
		return fn(ctx)
	}
	qctx, cancel := context.WithDeadlineCause(ctx, st.deadline, errTimedOut)
	defer cancel()
	err := fn(qctx)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(qctx), errTimedOut) {
		// Our deadline, not the caller's: say which bound ended it.
		return fmt.Errorf("%w after %v: %w (%w)", ErrTimeout, st.e.set.Timeout, context.DeadlineExceeded, err)
	}
	return err
}

func (st *Statement) stream(ctx context.Context, start func(*Header) error, row func([]any) error) error {
	inst, a := st.inst, st.a
	if len(a.unbound) > 0 {
		return unbound(a.unbound)
	}
	h := &Header{Range: a.Range, Mode: st.opts.Mode}
	h.Timing.Steps = st.steps.Steps
	inst.took = func(d time.Duration) { h.Timing.Steps = append(h.Timing.Steps, Step{StepInstance, d}) }
	if a.relations {
		begin := time.Now()
		if err := inst.need(ctx); err != nil {
			return err
		}
		if err := createRelations(ctx, inst.conn, st.rels); err != nil {
			return err
		}
		h.Timing.step(StepRelations, begin)
	}
	h.Timing.Open = time.Since(st.begin)
	begin := time.Now()
	var files []string
	for _, u := range st.uses {
		f, tr, err := st.readTable(ctx, u)
		if err != nil {
			return fmt.Errorf("query: table %s: %w", u.name, err)
		}
		files = append(files, f...)
		h.Timing.Steps = append(h.Timing.Steps, tr.Timing.Steps...)
		h.Tables = append(h.Tables, tr)
	}
	if len(h.Tables) > 0 {
		h.KnownAt = st.opts.KnownAt
	}
	if st.self != "" && !a.NoReadings {
		h.first(h.Tables[0])
	}
	for _, tr := range h.Tables {
		h.Timing.Hot += tr.Timing.Hot
		h.Timing.Plan += tr.Timing.Plan
		h.Timing.DayCopies += tr.Timing.DayCopies
	}
	// The default table's schema is searched first: an unqualified
	// relation of the tiers is its.
	search := ""
	if st.self != "" && !a.NoReadings {
		search = st.self
	}
	threads := st.e.set.Threads
	if len(files) == 0 && len(inst.hot) > 0 {
		threads = 1
	}
	if err := st.lock(ctx, h, files, threads, search); err != nil {
		return err
	}
	h.Timing.Read = time.Since(begin)
	return run(ctx, inst, runSpec{sql: a.sql, rendered: a.rendered, params: st.params, small: smallHint(a), memo: a.memo, scope: st.scope(), pages: st.e.pages}, h, start, row)
}

// scope returns the tables whose views the statement binds, its default
// first, or nil where it may bind an in-memory relation too: its kept
// columns are the columns for these tables (see runMemo.columns).
func (st *Statement) scope() []*Table {
	if st.a.relations {
		return nil
	}
	out := make([]*Table, 0, len(st.uses))
	for _, u := range st.uses {
		out = append(out, u.t)
	}
	return out
}

// readTable reads the tiers of the table u into the schema of its name,
// with the relations the statement reads of it, and returns the files
// they read.
func (st *Statement) readTable(ctx context.Context, u use) ([]string, TableRead, error) {
	inst, e := st.inst, &reader{Table: u.t, set: st.e.set}
	p := placeOf(u.name)
	interval := u.t.table.TimeModel == series.Interval
	var (
		tr  TableRead
		pre *storedDays
		err error
	)
	r := u.r
	if u.dailyOnly && interval {
		if pre, r, err = e.peekDaily(ctx, r, st.opts); err != nil {
			return nil, tr, err
		}
	}
	files, err := e.read(ctx, inst, p, r, st.opts, u.versions, &tr)
	if err != nil {
		return nil, tr, err
	}
	if pre != nil && (tr.Snapshot != pre.source || !tr.HasWatermark || !tr.Watermark.Equal(pre.w)) {
		// The table moved on since its rollup: read it whole.
		pre, tr = nil, TableRead{}
		more, err := e.read(ctx, inst, p, u.r, st.opts, u.versions, &tr)
		if err != nil {
			return nil, tr, err
		}
		files = append(files, more...)
	}
	if !u.dailyOnly || !interval {
		inst.defineReadings(p)
	}
	if (u.daily || u.completeness) && interval {
		stored := pre
		if stored == nil {
			if stored, err = e.storedDaily(ctx, &tr, u.r, st.opts); err != nil {
				return nil, tr, err
			}
		}
		if stored != nil {
			files = append(files, stored.files...)
		}
		copies, err := createDaily(ctx, inst, e, st.e.days, u.t.layout, p, stored)
		if err != nil {
			return nil, tr, err
		}
		files = append(files, copies...)
		tr.Timing.DayCopies = len(copies)
	}
	// completeness counts from daily, created above.
	if u.completeness && interval {
		dueBy := st.opts.now().Add(-st.e.set.DeliveryLag)
		createCompleteness(inst, u.t.table, u.t.layout, p, u.days, dueBy)
	}
	return files, tr, nil
}

// visibleRelations returns rels with only the rows of the tables may
// allows, by each relation's column "table"; a relation without one is
// the deployment's, not a table's, and is kept whole. A nil may keeps all.
func visibleRelations(rels []Relation, may func(string) bool) []Relation {
	if may == nil {
		return rels
	}
	out := make([]Relation, len(rels))
	for i, r := range rels {
		out[i] = r
		col := slices.IndexFunc(r.Columns, func(c Column) bool { return c.Name == "table" })
		if col < 0 {
			continue
		}
		out[i].Rows = nil
		for _, row := range r.Rows {
			if name, ok := row[col].(string); ok && may(name) {
				out[i].Rows = append(out[i].Rows, row)
			}
		}
	}
	return out
}

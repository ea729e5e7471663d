package query

import (
	"context"
	"database/sql"
	"fmt"
	"github.com/meterstore/meterstore/internal/resolve"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// The hot tier's rows reach a query as table functions of its DuckDB, one
// per relation of a HotRead, which DuckDB scans as it computes the
// statement: in parallel, a partition per thread, each chunk of 2,048
// rows filled column by column from a HotCursor, with only the columns
// the statement needs (DuckDB's projection pushdown). Nothing is copied
// into a table first, and memory holds a few batches per thread.

// A hotScan is the table functions of one HotRead in a query's DuckDB.
type hotScan struct {
	read    HotRead
	shape   HotShape
	table   string   // the table read, for Header.Tables
	fns     []string // the function of each relation: rows, then each dictionary
	winners string   // the function of the rows' winning versions, if the read resolves
	threads int
	// columns are the names the statement may read columns by, nil for
	// every column: a dictionary none of whose columns it names is not
	// joined.
	columns map[string]bool

	// pending are the table functions not registered yet, by name, and
	// registered counts those that are: a function is registered when a
	// view first calls it (register), so that a statement none of whose
	// views reads the hot tier leaves its DuckDB without a function.
	pending    map[string]func(*sql.Conn) error
	registered int

	mu     sync.Mutex
	err    error // the first a cursor failed with
	closed bool
}

// newHotScan returns the table functions of read's relations, named after
// prefix; none is registered before a view calls it (register).
func newHotScan(read HotRead, table, prefix string, threads int, columns map[string]bool) (*hotScan, error) {
	s := &hotScan{read: read, shape: read.Shape(), table: table, threads: max(threads, 1), columns: columns,
		pending: map[string]func(*sql.Conn) error{}}
	rels := []HotRelation{s.shape.Rows}
	for _, d := range s.shape.Dicts {
		rels = append(rels, d.HotRelation)
	}
	if s.shape.Resolves {
		rels = append(rels, s.shape.Rows)
	}
	for i, rel := range rels {
		infos := make([]duckdb.ColumnInfo, len(rel.Columns))
		for j, c := range rel.Columns {
			t, err := hotType(c.Kind)
			if err != nil {
				return nil, fmt.Errorf("query: hot column %s: %w", c.Name, err)
			}
			infos[j] = duckdb.ColumnInfo{Name: c.Name, T: t}
		}
		name := prefix + "_" + strconv.Itoa(i)
		f := &hotFunc{scan: s, rel: i, infos: infos, rows: rel.Rows}
		if i == len(s.shape.Dicts)+1 {
			f.rel, f.winners = 0, true
		}
		s.pending[name] = f.register(name)
		if f.winners {
			s.winners = name
		} else {
			s.fns = append(s.fns, name)
		}
	}
	return s, nil
}

// register returns the registration of f as the table function name.
func (f *hotFunc) register(name string) func(*sql.Conn) error {
	return func(conn *sql.Conn) error {
		return duckdb.RegisterTableUDF(conn, name, duckdb.ParallelChunkTableFunction{
			BindArgumentsContext: func(ctx context.Context, _ map[string]any, _ ...any) (duckdb.ParallelChunkTableSource, error) {
				return &hotSource{hotFunc: f, ctx: ctx}, nil
			},
		})
	}
}

// calledBy reports whether the SQL text calls a table function of s.
func (s *hotScan) calledBy(text string) bool {
	if s.registered > 0 {
		return true
	}
	for name := range s.pending {
		if strings.Contains(text, name+"(") {
			return true
		}
	}
	return false
}

// register registers on conn the table functions of s that the SQL text
// calls and are not registered yet, and returns how many it registered.
func (s *hotScan) register(conn *sql.Conn, text string) (int, error) {
	n := 0
	for name, reg := range s.pending {
		if !strings.Contains(text, name+"(") {
			continue
		}
		if err := reg(conn); err != nil {
			return n, fmt.Errorf("query: register the hot relation %s: %w", name, err)
		}
		delete(s.pending, name)
		s.registered++
		n++
	}
	return n, nil
}

// hotType returns the DuckDB type of a table function's column of kind k.
// Times and dates cross as numbers, which the views turn into DuckDB's
// types with a function of their own: duckdb-go would take them only as
// time.Time, a value per row.
func hotType(k HotKind) (duckdb.TypeInfo, error) {
	switch k {
	case KindText:
		return duckdb.NewTypeInfo(duckdb.TYPE_VARCHAR)
	case KindInt32, KindDate:
		return duckdb.NewTypeInfo(duckdb.TYPE_INTEGER)
	case KindInt64, KindTime:
		return duckdb.NewTypeInfo(duckdb.TYPE_BIGINT)
	case KindDecimal:
		return duckdb.NewDecimalInfo(18, 6)
	case KindUint64:
		return duckdb.NewTypeInfo(duckdb.TYPE_UBIGINT)
	}
	return nil, fmt.Errorf("unknown kind %d", k)
}

// fail records err as the scan's, the first one only, and returns the
// error DuckDB reports.
func (s *hotScan) fail(err error) error {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
	return fmt.Errorf("hot tier: %w", err)
}

// failed returns the error a cursor failed with, if any.
func (s *hotScan) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// close ends the read, once.
func (s *hotScan) close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	return s.read.Close()
}

// A hotFunc is the table function of one relation of a hotScan.
type hotFunc struct {
	scan    *hotScan
	rel     int
	winners bool
	infos   []duckdb.ColumnInfo
	rows    int64
	// days, if set, are the columns of the day sums the function reads
	// instead of the relation, from lo on (see HotDayRead).
	days []HotColumn
	lo   time.Time
}

// days makes the day sums of s's read from lo on the table function
// name, registered when a view calls it, and returns its columns; ok is
// false where the read sums no days.
func (s *hotScan) days(name string, lo time.Time) (cols []HotColumn, ok bool, err error) {
	dr, is := s.read.(HotDayRead)
	if !is {
		return nil, false, nil
	}
	cols, ok = dr.DayColumns()
	if !ok {
		return nil, false, nil
	}
	infos := make([]duckdb.ColumnInfo, len(cols))
	for j, c := range cols {
		t, err := hotType(c.Kind)
		if err != nil {
			return nil, false, fmt.Errorf("query: hot day column %s: %w", c.Name, err)
		}
		infos[j] = duckdb.ColumnInfo{Name: c.Name, T: t}
	}
	f := &hotFunc{scan: s, infos: infos, rows: -1, days: cols, lo: lo}
	if s.pending == nil {
		s.pending = map[string]func(*sql.Conn) error{}
	}
	s.pending[name] = f.register(name)
	return cols, true, nil
}

// column returns the function's column i.
func (f *hotFunc) column(i int) HotColumn {
	if f.days != nil {
		return f.days[i]
	}
	return f.scan.shape.column(f.rel, i)
}

// scanUnit opens the cursor of unit u with the columns cols.
func (f *hotFunc) scanUnit(ctx context.Context, u int, cols []int) (HotCursor, error) {
	if f.days != nil {
		return f.scan.read.(HotDayRead).ScanDays(ctx, u, f.lo, cols)
	}
	return f.scan.read.Scan(ctx, f.rel, u, cols, f.winners)
}

// A hotSource is one binding of a hotFunc in a statement: one scan of its
// relation, its units shared by DuckDB's threads.
type hotSource struct {
	*hotFunc
	ctx   context.Context // the statement's
	next  atomic.Int64    // the next unit to read
	opens []*opening      // of each unit, once asked for
}

// An opening is the cursor of one unit, opened by the thread that reads
// the unit before it, so that PostgreSQL starts on a partition while the
// one before it is still being read.
type opening struct {
	once sync.Once
	done chan struct{}
	cur  HotCursor
	err  error
}

// open starts opening unit u's cursor with the columns cols, unless it
// is under way, and returns its opening.
func (s *hotSource) open(u int, cols []int) *opening {
	o := s.opens[u]
	o.once.Do(func() {
		go func() {
			defer close(o.done)
			o.cur, o.err = s.scanUnit(s.ctx, u, cols)
		}()
	})
	return o
}

func (s *hotSource) ColumnInfos() []duckdb.ColumnInfo { return s.infos }

func (s *hotSource) Cardinality() *duckdb.CardinalityInfo {
	if s.rows < 0 {
		return nil
	}
	return &duckdb.CardinalityInfo{Cardinality: uint(s.rows)}
}

func (s *hotSource) Init() duckdb.ParallelTableSourceInfo {
	s.next.Store(0)
	s.opens = make([]*opening, s.scan.read.Units(s.rel))
	for i := range s.opens {
		s.opens[i] = &opening{done: make(chan struct{})}
	}
	return duckdb.ParallelTableSourceInfo{MaxThreads: max(1, min(s.scan.threads, s.scan.read.Units(s.rel)))}
}

func (s *hotSource) NewLocalState() any { return &hotLocal{} }

// A hotLocal is what one thread of a hotSource reads: the columns DuckDB
// asks for and the cursor of its current unit.
type hotLocal struct {
	cols    []int // of the relation, as the cursor has them
	writers []func(chunk *duckdb.DataChunk, row int, c HotCursor) error
	cur     HotCursor
	started bool
}

func (s *hotSource) FillChunk(local any, chunk duckdb.DataChunk) error {
	l := local.(*hotLocal)
	if !l.started {
		l.started = true
		for i := range s.infos {
			// An error names a column the statement does not read.
			if _, err := chunk.GetVector(i); err == nil {
				l.cols = append(l.cols, i)
				l.writers = append(l.writers, writer(i, len(l.cols)-1, s.column(i).Kind))
			}
		}
	}
	size := duckdb.GetDataChunkCapacity()
	n := 0
	for n < size {
		if l.cur == nil {
			u := int(s.next.Add(1) - 1)
			if u >= len(s.opens) {
				break
			}
			o := s.open(u, l.cols)
			if u+1 < len(s.opens) {
				s.open(u+1, l.cols)
			}
			<-o.done
			if o.err != nil {
				return s.scan.fail(o.err)
			}
			l.cur = o.cur
		}
		if !l.cur.Next(s.ctx) {
			err := l.cur.Err()
			l.cur.Close()
			l.cur = nil
			if err != nil {
				return s.scan.fail(err)
			}
			continue
		}
		for _, w := range l.writers {
			if err := w(&chunk, n, l.cur); err != nil {
				return s.scan.fail(err)
			}
		}
		n++
	}
	return chunk.SetSize(n)
}

// column returns column i of relation rel.
func (s HotShape) column(rel, i int) HotColumn {
	if rel == 0 {
		return s.Rows.Columns[i]
	}
	return s.Dicts[rel-1].Columns[i]
}

// writer returns the function that writes value v of a cursor, of kind
// k, into column col of a chunk.
func writer(col, v int, k HotKind) func(chunk *duckdb.DataChunk, row int, c HotCursor) error {
	null := func(chunk *duckdb.DataChunk, row int) error { return chunk.SetValue(col, row, nil) }
	switch k {
	case KindText:
		return func(chunk *duckdb.DataChunk, row int, c HotCursor) error {
			if c.Null(v) {
				return null(chunk, row)
			}
			return duckdb.SetChunkValue(*chunk, col, row, c.Bytes(v))
		}
	case KindInt32, KindDate:
		return func(chunk *duckdb.DataChunk, row int, c HotCursor) error {
			if c.Null(v) {
				return null(chunk, row)
			}
			return duckdb.SetChunkValue(*chunk, col, row, int32(c.Int64(v)))
		}
	case KindUint64:
		return func(chunk *duckdb.DataChunk, row int, c HotCursor) error {
			if c.Null(v) {
				return null(chunk, row)
			}
			return duckdb.SetChunkValue(*chunk, col, row, c.Uint64(v))
		}
	}
	return func(chunk *duckdb.DataChunk, row int, c HotCursor) error {
		if c.Null(v) {
			return null(chunk, row)
		}
		return duckdb.SetChunkValue(*chunk, col, row, c.Int64(v))
	}
}

// relation returns the SELECT of the hot rows with the layout's columns,
// in its order and types: the rows whose own columns meet where (SQL on
// the layout's names), resolved per merge key if resolved, joined to the
// dictionaries they refer to. The read resolves them where it can, unless
// where hides rows by their recorded_at (a ceiling, under which another
// version may win): DuckDB does then.
func (s *hotScan) relation(l layout, where []string, resolved, ceiling bool) (string, error) {
	sh := s.shape
	// The rows, their times and versions as the layout has them.
	own := map[string]bool{}
	inner := make([]string, len(sh.Rows.Columns))
	for i, c := range sh.Rows.Columns {
		own[c.Name] = true
		inner[i] = hotValue(ident(c.Name), c.Kind) + ` AS ` + ident(c.Name)
	}
	fn := s.fns[0]
	if resolved && s.winners != "" && !ceiling {
		fn, resolved = s.winners, false
	}
	rows := `(SELECT ` + strings.Join(inner, ", ") + ` FROM ` + fn + `())`
	if ceiling && !own["recorded_at"] {
		rows = s.withRecordedAt(rows)
	}
	if len(where) > 0 {
		rows = `(SELECT * FROM ` + rows + ` WHERE ` + strings.Join(where, " AND ") + `)`
	}
	if resolved {
		key := []string{sh.Series, "from"}
		if sh.Series == "" {
			key = key[:0]
			for _, k := range l.key {
				if !own[k] {
					return "", fmt.Errorf("query: the hot rows have no column %s of the merge key", k)
				}
				key = append(key, k)
			}
		}
		rows = `(` + resolve.SQL(resolve.Engine, rows, nil, key, false) + `)`
	}
	from := rows + ` AS r`
	source := map[string]string{}
	for name := range own {
		source[name] = `r.` + ident(name)
	}
	for i, d := range sh.Dicts {
		if !s.needs(l, d) {
			// The statement reads none of its columns, whose values
			// fail the statement if the analysis missed one.
			for _, c := range d.Columns {
				if c.Name != d.ID {
					source[c.Name] = `error(` + quote("query: column "+c.Name+" of the hot tier was not read for this statement") + `)`
				}
			}
			continue
		}
		alias := `d` + strconv.Itoa(i)
		inner := make([]string, len(d.Columns))
		for j, c := range d.Columns {
			inner[j] = hotValue(ident(c.Name), c.Kind) + ` AS ` + ident(c.Name)
			if c.Name != d.ID {
				source[c.Name] = alias + `.` + ident(c.Name)
			}
		}
		from += ` JOIN (SELECT ` + strings.Join(inner, ", ") + ` FROM ` + s.fns[i+1] + `()) AS ` + alias +
			` ON ` + alias + `.` + ident(d.ID) + ` = r.` + ident(d.Ref)
	}
	sel := make([]string, len(l.cols))
	for i, c := range l.cols {
		src, ok := source[c.name]
		if !ok {
			src = "NULL"
		}
		sel[i] = `CAST(` + src + ` AS ` + c.typ + `) AS ` + ident(c.name)
	}
	return `SELECT ` + strings.Join(sel, ", ") + ` FROM ` + from, nil
}

// withRecordedAt returns rows with the recorded_at of the dictionary that
// holds it (the lean layout's attributes): a ceiling compares it, and the
// resolution under a ceiling ranks by it, both before the dictionaries are
// joined for the answer.
func (s *hotScan) withRecordedAt(rows string) string {
	for j, d := range s.shape.Dicts {
		for _, c := range d.Columns {
			if c.Name != "recorded_at" {
				continue
			}
			var id HotColumn
			for _, dc := range d.Columns {
				if dc.Name == d.ID {
					id = dc
				}
			}
			return `(SELECT r0.*, d0.recorded_at FROM ` + rows + ` AS r0 JOIN (SELECT ` + hotValue(ident(d.ID), id.Kind) + ` AS id, ` +
				hotValue(ident(c.Name), c.Kind) + ` AS recorded_at FROM ` + s.fns[j+1] + `()) AS d0 ON d0.id = r0.` + ident(d.Ref) + `)`
		}
	}
	return rows
}

// needs reports whether the statement may read a column of dictionary d,
// or d has the layout's first column: where a statement needs no column of
// a union, such as count(*) of readings_versions, DuckDB still reads the
// union's first one.
func (s *hotScan) needs(l layout, d HotDict) bool {
	if s.columns == nil {
		return true
	}
	for _, c := range d.Columns {
		if c.Name != d.ID && (s.columns[strings.ToLower(c.Name)] || c.Name == l.cols[0].name) {
			return true
		}
	}
	return false
}

// hotValue returns the expression that turns column x of a table
// function, of kind k, into its DuckDB value.
func hotValue(x string, k HotKind) string {
	switch k {
	case KindTime:
		return `make_timestamptz(` + x + `)`
	case KindDate:
		return `(DATE '1970-01-01' + ` + x + `)`
	case KindUint64:
		return `CAST(` + x + ` AS DECIMAL(20,0))`
	}
	return x
}

package query

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// resultTable is the temporary table a statement's result is computed
// into: DuckDB keeps it within MemoryLimit and spills it into the
// instance's spill directory, where duckdb-go would hold the result of a
// query whole in memory, past any limit.
const resultTable = "meterstore_result"

// run prepares the statement, refuses it unless DuckDB calls it a SELECT,
// runs it into resultTable, completes h with its columns and hands h to
// start and each row to row, reading the table a page at a time.
// analyze has made sure it is one statement: the driver would run every
// statement before the last on Prepare, and so would CREATE TABLE AS.
func run(ctx context.Context, inst *instance, r runSpec, h *Header, start func(*Header) error, row func([]any) error) error {
	conn := inst.conn
	begin := time.Now()
	names, types, ok := r.memo.columns(r.scope)
	if !ok {
		names, types, ok = described(ctx, conn, r)
		if !ok {
			var err error
			if names, types, err = check(ctx, conn, r.sql, r.rendered); err != nil {
				return inst.finish(h, err)
			}
		}
		r.memo.keep(r.scope, names, types)
	}
	begin = h.Timing.step(StepDescribe, begin)
	if unresolved(types) {
		// DuckDB learns the types from the values bound: the table
		// has the columns, and the values are measured as the pages
		// are read.
		types = nil
	} else {
		h.Columns = names
	}
	computing := begin
	tried := false
	if !unresolved(types) && r.memo.small(r.small) {
		res, ok, err := bounded(ctx, conn, r, names, types)
		h.Timing.Run = time.Since(computing)
		begin = h.Timing.step(StepBounded, begin)
		if err != nil || ok {
			if err := inst.finish(h, err); err != nil {
				return err
			}
			h.Timing.step(StepFinish, begin)
			return handOver(h, res, r.memo, start, row)
		}
		tried = true
	}
	sizes, err := create(ctx, conn, r, names, types)
	h.Timing.Run = time.Since(computing)
	begin = h.Timing.step(StepCreate, begin)
	var de *duckdb.Error
	if errors.As(err, &de) && de.Type == duckdb.ErrorTypeParser {
		// DESCRIBE and SUMMARIZE, which CREATE TABLE AS does not take:
		// their results are small enough to run as they are.
		err := direct(ctx, conn, r, h, start, row)
		return inst.finish(h, err)
	}
	if err != nil {
		err = statementError(err, names, r.rendered)
	}
	if err := inst.finish(h, err); err != nil {
		return err
	}
	h.Timing.step(StepFinish, begin)
	if len(r.params) > 0 {
		// The values bound may change the types the preparation saw:
		// the table has the columns' types.
		types = nil
	}
	var n int64
	counted := func(vals []any) error {
		n++
		return row(vals)
	}
	if err := fetch(ctx, conn, h, result{types: types, sizes: sizes}, start, counted, r.pages); err != nil {
		return err
	}
	if tried {
		// Past the bounds of a small result, by its rows or a row's
		// bytes: the next run need not try again.
		n = max(n, boundedRows+1)
	}
	r.memo.ran(n)
	return nil
}

// handOver hands h to start and the rows of a small result to row, and
// records them in memo once all are handed over.
func handOver(h *Header, res boundedResult, memo *runMemo, start func(*Header) error, row func([]any) error) error {
	h.Types = res.types
	if err := start(h); err != nil {
		return err
	}
	for _, vals := range res.rows {
		if err := row(vals); err != nil {
			return err
		}
	}
	memo.ran(int64(len(res.rows)))
	return nil
}

// A runSpec is what run needs of a statement besides its instance.
type runSpec struct {
	sql string
	// rendered says sql is DuckDB's rendering of the caller's statement
	// (see analysis.render), so that an error quotes none of it.
	rendered bool
	params   []any
	// small says the analysis takes the result for small (smallHint);
	// memo is what the statement's earlier runs learnt, if kept.
	small bool
	memo  *runMemo
	// scope are the tables whose views the statement binds, its default
	// first; nil where it binds other relations too, whose columns are
	// not kept (see runMemo.columns).
	scope []*Table
	// pages, if set, learns the rows and bytes of each page (tests).
	pages func(rows, bytes int64)
}

// create computes the statement's result into resultTable. The statement
// is last, so that a trailing comment of it stays harmless, and on lines
// of its own, so that an error placed in it quotes the caller's line (see
// quoteCaller). Where types are known, the statement is a subquery whose
// values past maxValueBytes raise an error as DuckDB computes them, before
// any is stored (refusing repeat('x', 1500000000) took 68 s and 4.5 GB
// when the table took the value first), and whose rows' sizes, if they
// vary, are stored beside them, in a last column: measured from the
// values later, the strings of a table spilled to disk were read back all
// at once. create returns the SQL of that column, empty if there is none.
// A statement that does not parse as a subquery (a trailing semicolon and
// comment, DESCRIBE) is created unguarded, its values measured as its
// pages are read. A repeated column name is renamed in the table; the
// statement's own names are taken from its preparation.
func create(ctx context.Context, conn *sql.Conn, r runSpec, names []string, types []duckdb.TypeInfo) (sizes string, err error) {
	const head = `CREATE TEMP TABLE ` + resultTable + ` AS`
	if types != nil {
		list := guardedColumns(types)
		for i := range list {
			list[i] += ` AS ` + ident(names[i])
		}
		size, _, varies := rowSize(types)
		if varies {
			list = append(list, size+` AS `+rowBytesColumn)
		}
		text := strings.TrimRight(r.sql, " \t\r\n;")
		_, err := conn.ExecContext(ctx, head+` SELECT `+strings.Join(list, ", ")+` FROM (`+"\n"+text+"\n)", r.params...)
		if !ours(err) {
			if !varies || err != nil {
				size = ""
			}
			return size, err
		}
	}
	_, err = conn.ExecContext(ctx, head+"\n"+r.sql, r.params...)
	return "", err
}

// rowBytesColumn is the last column of resultTable where create stores
// the bytes of each row.
const rowBytesColumn = `meterstore_row_bytes`

// ours reports whether err is one of the guarded form of a statement,
// not of the statement itself: a parser error (the statement parses
// alone, check saw to that) or one DuckDB places on the form's first line.
func ours(err error) bool {
	var de *duckdb.Error
	if !errors.As(err, &de) {
		return false
	}
	return de.Type == duckdb.ErrorTypeParser || strings.Contains(de.Msg, contextMark+"1: ")
}

// direct runs the statement as duckdb-go runs it, its result held whole
// by DuckDB, and hands h to start and each row to row.
func direct(ctx context.Context, conn *sql.Conn, r runSpec, h *Header, start func(*Header) error, row func([]any) error) error {
	rows, err := conn.QueryContext(ctx, r.sql, r.params...)
	if err != nil {
		return classify(quoteCaller(err, 0, r.rendered))
	}
	defer rows.Close()
	if h.Columns, err = rows.Columns(); err != nil {
		return fmt.Errorf("query: %w", err)
	}
	types, err := rows.ColumnTypes()
	if err != nil {
		return fmt.Errorf("query: %w", err)
	}
	h.Types = make([]string, len(types))
	for i, t := range types {
		h.Types[i] = t.DatabaseTypeName()
	}
	if err := start(h); err != nil {
		return err
	}
	vals := make([]any, len(h.Columns))
	dest := make([]any, len(vals))
	for i := range dest {
		dest[i] = &vals[i]
	}
	_, _, err = pageRows(ctx, rows, dest, vals, row)
	return err
}

// described returns the names and types of the statement's columns as DuckDB
// binds it (DESCRIBE), without preparing it: preparing a statement also
// optimises it, which folds its constants, and computed a value such as
// repeat('x', 1500000000) once before the statement ran it again. DESCRIBE
// gives each type as SQL, which a cast of NULL turns into a TypeInfo. ok
// is false where DESCRIBE does not take the statement (one with
// parameters, DESCRIBE itself, one that fails to bind): check prepares it
// then, and says what is wrong with it.
func described(ctx context.Context, conn *sql.Conn, r runSpec) (names []string, types []duckdb.TypeInfo, ok bool) {
	if len(r.params) > 0 {
		return nil, nil, false
	}
	rows, err := conn.QueryContext(ctx, "DESCRIBE\n"+r.sql)
	if err != nil {
		return nil, nil, false
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil || len(cols) < 2 {
		return nil, nil, false
	}
	vals := make([]any, len(cols))
	dest := make([]any, len(cols))
	for i := range dest {
		dest[i] = &vals[i]
	}
	var casts []string
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, nil, false
		}
		name, ok1 := vals[0].(string)
		typ, ok2 := vals[1].(string)
		if !ok1 || !ok2 {
			return nil, nil, false
		}
		names = append(names, name)
		casts = append(casts, `CAST(NULL AS `+typ+`)`)
	}
	if rows.Err() != nil || len(names) == 0 {
		return nil, nil, false
	}
	_, types, err = columnsOfQuery(ctx, conn, `SELECT `+strings.Join(casts, ", "))
	if err != nil || len(types) != len(names) {
		return nil, nil, false
	}
	return names, types, true
}

// check prepares query and returns its column names and types, or an
// error classified as the statement's or not, or ErrNotReadOnly for a
// statement that is not a SELECT. rendered is runSpec's.
func check(ctx context.Context, conn *sql.Conn, query string, rendered bool) ([]string, []duckdb.TypeInfo, error) {
	var (
		names []string
		types []duckdb.TypeInfo
	)
	err := conn.Raw(func(dc any) error {
		st, err := dc.(driver.ConnPrepareContext).PrepareContext(ctx, query)
		if err != nil {
			return classify(quoteCaller(err, 0, rendered))
		}
		defer st.Close()
		ds, ok := st.(*duckdb.Stmt)
		if !ok {
			return fmt.Errorf("query: unexpected statement type %T", st)
		}
		typ, err := ds.StatementType()
		if err != nil {
			return fmt.Errorf("query: %w", err)
		}
		if typ != duckdb.STATEMENT_TYPE_SELECT {
			return fmt.Errorf("%w: statement type %d", ErrNotReadOnly, typ)
		}
		names, types, err = columnsOf(ds)
		return err
	})
	return names, types, err
}

// columnsOfQuery prepares query and returns its column names and types.
func columnsOfQuery(ctx context.Context, conn *sql.Conn, query string) ([]string, []duckdb.TypeInfo, error) {
	var (
		names []string
		types []duckdb.TypeInfo
	)
	err := conn.Raw(func(dc any) error {
		st, err := dc.(driver.ConnPrepareContext).PrepareContext(ctx, query)
		if err != nil {
			return err
		}
		defer st.Close()
		ds, ok := st.(*duckdb.Stmt)
		if !ok {
			return fmt.Errorf("unexpected statement type %T", st)
		}
		names, types, err = columnsOf(ds)
		return err
	})
	return names, types, err
}

// columnsOf returns the names and types of a prepared statement's columns.
func columnsOf(ds *duckdb.Stmt) ([]string, []duckdb.TypeInfo, error) {
	n, err := ds.ColumnCount()
	if err != nil {
		return nil, nil, fmt.Errorf("query: %w", err)
	}
	names, types := make([]string, n), make([]duckdb.TypeInfo, n)
	for i := range names {
		if names[i], err = ds.ColumnName(i); err != nil {
			return nil, nil, fmt.Errorf("query: %w", err)
		}
		if types[i], err = ds.ColumnTypeInfo(i); err != nil {
			if t, terr := ds.ColumnType(i); terr == nil && t == duckdb.TYPE_INVALID && n == 1 {
				// See unresolved.
				return names, nil, nil
			}
			return nil, nil, fmt.Errorf("query: column %d's type: %w", i+1, err)
		}
	}
	return names, types, nil
}

// unresolved reports whether types are those of a statement whose
// parameters' types DuckDB could not infer without their values: it then
// prepares one column named "unknown" of no type, whatever the statement's
// columns are, and only the result table knows their names and types.
func unresolved(types []duckdb.TypeInfo) bool {
	return types == nil || len(types) == 1 && types[0].InternalType() == duckdb.TYPE_INVALID
}

// valueError returns err unchanged, or for the error a page raised at a
// value past maxValueBytes, one wrapping ErrResultTooLarge that names the
// column of columns it was in.
func valueError(err error, columns []string) error {
	_, rest, ok := strings.Cut(err.Error(), tooLargeMark)
	if !ok {
		return err
	}
	var i, n int64
	if _, serr := fmt.Sscanf(rest, "%d %d", &i, &n); serr != nil || i < 0 || i >= int64(len(columns)) {
		return err
	}
	return fmt.Errorf("%w: a value of column %q has %d bytes, more than the %d one value may have; select a part of it (left, substr)",
		ErrResultTooLarge, columns[i], n, maxValueBytes)
}

// pageRows hands the rows of one page to row, and returns the bytes and
// the number of them.
func pageRows(ctx context.Context, rows *sql.Rows, dest, vals []any, row func([]any) error) (held, n int64, err error) {
	defer rows.Close()
	for rows.Next() {
		if n++; n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, 0, fmt.Errorf("query: %w", context.Cause(ctx))
			}
		}
		if err := rows.Scan(dest...); err != nil {
			return 0, 0, fmt.Errorf("query: %w", err)
		}
		held += rowOverhead + int64(len(vals))*valueOverhead
		for _, v := range vals {
			held += valueSize(v)
		}
		if err := row(vals); err != nil {
			return 0, 0, err
		}
	}
	if err := rows.Err(); err != nil {
		return 0, 0, fmt.Errorf("query: %w", err)
	}
	return held, n, nil
}

// classify wraps an error of DuckDB preparing or running the statement:
// ErrInvalidQuery for what the statement's text or values are to blame
// for (it fails again unchanged: a syntax error, an unknown name, a cast
// or error() that fails on its values), ErrNotPermitted for what it may
// not reach, ErrMemoryLimit for a statement past the memory limit, the
// error alone for the rest, which are the engine's.
func classify(err error) error {
	var de *duckdb.Error
	if errors.As(err, &de) {
		switch de.Type {
		case duckdb.ErrorTypeParser, duckdb.ErrorTypeSyntax, duckdb.ErrorTypeBinder, duckdb.ErrorTypeCatalog,
			duckdb.ErrorTypeConversion, duckdb.ErrorTypeOutOfRange, duckdb.ErrorTypeDivideByZero,
			duckdb.ErrorTypeInvalidInput, duckdb.ErrorTypeMismatchType, duckdb.ErrorTypeInvalidType,
			duckdb.ErrorTypeUnknownType, duckdb.ErrorTypeDecimal, duckdb.ErrorTypeParameterNotResolved,
			duckdb.ErrorTypeParameterNotAllowed, duckdb.ErrorTypeNotImplemented, duckdb.ErrorTypeExpression,
			duckdb.ErrorTypeObjectSize:
			return fmt.Errorf("%w: %w", ErrInvalidQuery, err)
		case duckdb.ErrorTypePermission, duckdb.ErrorTypeMissingExtension, duckdb.ErrorTypeAutoLoad,
			duckdb.ErrorTypeSettings, duckdb.ErrorTypeInvalidConfiguration, duckdb.ErrorTypeHTTP,
			duckdb.ErrorTypeNetwork:
			return fmt.Errorf("%w: %w", ErrNotPermitted, err)
		case duckdb.ErrorTypeOutOfMemory:
			return fmt.Errorf("%w: %w", ErrMemoryLimit, err)
		}
	}
	return fmt.Errorf("query: %w", err)
}

// limits bound a result held in memory: its rows, and its approximate
// bytes in Go's heap.
type limits struct {
	rows  int
	bytes int64
}

// A collector holds the rows of a stream in a Result, failing with
// ErrTooManyRows past lim.rows rows and with ErrResultTooLarge past
// lim.bytes bytes.
type collector struct {
	lim  limits
	res  Result
	held int64
}

func (c *collector) start(h *Header) error {
	c.res.Header = *h
	return nil
}

func (c *collector) row(vals []any) error {
	if len(c.res.Rows) == c.lim.rows {
		c.res.Rows = nil
		return fmt.Errorf("%w: more than %d; aggregate, or add a LIMIT", ErrTooManyRows, c.lim.rows)
	}
	c.held += rowOverhead + int64(len(vals))*valueOverhead
	for _, v := range vals {
		c.held += valueSize(v)
	}
	if c.held > c.lim.bytes {
		n := len(c.res.Rows) + 1
		c.res.Rows = nil
		return fmt.Errorf("%w: more than %d bytes after %d rows; aggregate, select fewer columns, or add a LIMIT",
			ErrResultTooLarge, c.lim.bytes, n)
	}
	c.res.Rows = append(c.res.Rows, slices.Clone(vals))
	return nil
}

// The approximate heap cost of a row of a result beyond its values: the
// slice header in Rows, and per value the interface that holds it.
const (
	rowOverhead   = 24
	valueOverhead = 16
)

// valueSize approximates the bytes v holds beyond the interface that
// holds it, for the types duckdb-go returns. It errs on the low side for
// nothing that can grow: strings, blobs, lists, maps and structs are
// counted with their contents.
func valueSize(v any) int64 {
	switch x := v.(type) {
	case nil, bool, int8, int16, int32, uint8, uint16, uint32, float32:
		return 0
	case int, int64, uint, uint64, float64:
		return 8
	case string:
		return int64(len(x))
	case []byte:
		return 24 + int64(len(x))
	case time.Time:
		return 24
	case duckdb.Decimal:
		n := int64(8)
		if x.Value != nil {
			n += 32 + int64(len(x.Value.Bits()))*8
		}
		return n
	case *big.Int:
		if x == nil {
			return 0
		}
		return 32 + int64(len(x.Bits()))*8
	case duckdb.UUID:
		return 16
	case duckdb.Interval:
		return 16
	case []any:
		n := int64(24 + 16*len(x))
		for _, e := range x {
			n += valueSize(e)
		}
		return n
	case map[string]any:
		n := int64(48)
		for k, e := range x {
			n += 16 + int64(len(k)) + 16 + valueSize(e)
		}
		return n
	case duckdb.OrderedMap:
		n := int64(48)
		for _, k := range x.Keys() {
			n += 16 + valueSize(k)
		}
		for _, e := range x.Values() {
			n += 16 + valueSize(e)
		}
		return n
	case duckdb.Map:
		n := int64(48)
		for k, e := range x {
			n += 32 + valueSize(k) + valueSize(e)
		}
		return n
	case duckdb.Union:
		return 16 + int64(len(x.Tag)) + 16 + valueSize(x.Value)
	}
	return 16
}

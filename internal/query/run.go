package query

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// resultTable is the temporary table a statement's result is computed
// into: DuckDB keeps it within MemoryLimit and spills it into the
// instance's spill directory, where duckdb-go would hold the result of a
// query whole in memory, past any limit.
const resultTable = "meterstore_result"

// Pages of the result table bound what duckdb-go holds at once: the first
// has firstPage rows, each later one about pageBytes of values, within
// minPage and maxPage rows.
const (
	firstPage = 4096
	minPage   = 64
	maxPage   = 65536
	pageBytes = 8 << 20
)

// run prepares the statement, refuses it unless DuckDB calls it a SELECT,
// runs it into resultTable, completes h with its columns and hands h to
// start and each row to row, reading the table a page at a time.
// analyze has made sure it is one statement: the driver would run every
// statement before the last on Prepare, and so would CREATE TABLE AS.
// rendered says the statement is DuckDB's rendering of the caller's (see
// analysis.render), so that an error quotes none of it.
func run(ctx context.Context, inst *instance, query string, rendered bool, params []any, h *Header, start func(*Header) error, row func([]any) error) error {
	conn := inst.conn
	names, types, err := check(ctx, conn, query, rendered)
	if err != nil {
		return inst.finish(h, err)
	}
	// The statement is last, so that a trailing semicolon or comment of it
	// stays harmless, and on lines of its own, so that an error placed in
	// it quotes the caller's line (see quoteCaller); a repeated column
	// name is renamed in the table, and the statement's own names are
	// taken from its preparation.
	begin := time.Now()
	_, err = conn.ExecContext(ctx, `CREATE TEMP TABLE `+resultTable+` AS`+"\n"+query, params...)
	h.Timing.Run = time.Since(begin)
	var de *duckdb.Error
	if errors.As(err, &de) && de.Type == duckdb.ErrorTypeParser {
		// DESCRIBE and SUMMARIZE, which CREATE TABLE AS does not take:
		// their results are small enough to run as they are.
		err := direct(ctx, conn, query, rendered, params, h, start, row)
		return inst.finish(h, err)
	}
	if err != nil {
		err = classify(quoteCaller(err, 1, rendered))
	}
	if err := inst.finish(h, err); err != nil {
		return err
	}
	if !unresolved(types) {
		h.Columns = names
	}
	if len(params) > 0 {
		// The values bound may change the types the preparation saw, and
		// where a column's type depends on a parameter's, DuckDB prepares
		// one column "unknown" of no type: the table has the columns.
		types = nil
	}
	return fetch(ctx, conn, h, types, start, row)
}

// direct runs query as duckdb-go runs it, its result held whole by DuckDB,
// and hands h to start and each row to row.
func direct(ctx context.Context, conn *sql.Conn, query string, rendered bool, params []any, h *Header, start func(*Header) error, row func([]any) error) error {
	rows, err := conn.QueryContext(ctx, query, params...)
	if err != nil {
		return classify(quoteCaller(err, 0, rendered))
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

// check prepares query and returns its column names and types, or an
// error classified as the statement's or not, or ErrNotReadOnly for a
// statement that is not a SELECT. rendered is run's.
func check(ctx context.Context, conn *sql.Conn, query string, rendered bool) ([]string, []duckdb.Type, error) {
	var (
		names []string
		types []duckdb.Type
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
		n, err := ds.ColumnCount()
		if err != nil {
			return fmt.Errorf("query: %w", err)
		}
		names, types = make([]string, n), make([]duckdb.Type, n)
		for i := range names {
			if names[i], err = ds.ColumnName(i); err != nil {
				return fmt.Errorf("query: %w", err)
			}
			if types[i], err = ds.ColumnType(i); err != nil {
				return fmt.Errorf("query: %w", err)
			}
		}
		return nil
	})
	return names, types, err
}

// unresolved reports whether types are those of a statement whose
// parameters' types DuckDB could not infer without their values: it then
// prepares one column named "unknown" of no type, whatever the statement's
// columns are, and only the result table knows their names and types.
func unresolved(types []duckdb.Type) bool {
	return len(types) == 1 && types[0] == duckdb.TYPE_INVALID
}

// fetch reads resultTable a page at a time in the order its rows were
// inserted, the statement's order, and hands h to start before the first
// row and each row to row. types are the table's column types; if nil,
// they are read from the table, and so are h.Columns if nil or not as
// many. The context is checked between pages and every 1024 rows: handing
// a large result to Go takes time of its own. The rows of the table are
// numbered from 0 without gaps, so a page shorter than asked for is the
// last.
func fetch(ctx context.Context, conn *sql.Conn, h *Header, types []duckdb.Type, start func(*Header) error, row func([]any) error) error {
	if types == nil {
		names, t, err := tableColumns(ctx, conn)
		if err != nil {
			return err
		}
		if h.Columns == nil || len(names) != len(h.Columns) {
			h.Columns = names
		}
		types = t
	}
	list := guardedColumns(types)
	page, err := conn.PrepareContext(ctx, `SELECT `+list+` FROM `+resultTable+` WHERE rowid >= ? AND rowid < ?`)
	if err != nil {
		return fmt.Errorf("query: %w", err)
	}
	defer page.Close()
	vals := make([]any, len(h.Columns))
	dest := make([]any, len(vals))
	for i := range dest {
		dest[i] = &vals[i]
	}
	size := int64(firstPage)
	for lo, hi := int64(0), int64(0); ; lo = hi {
		hi = lo + size
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("query: %w", context.Cause(ctx))
		}
		rows, err := page.QueryContext(ctx, lo, hi)
		if err != nil {
			return valueError(fmt.Errorf("query: %w", err), h.Columns)
		}
		if lo == 0 {
			types, err := rows.ColumnTypes()
			if err != nil || len(types) != len(h.Columns) {
				rows.Close()
				return fmt.Errorf("query: the result's %d columns: %v", len(h.Columns), err)
			}
			h.Types = make([]string, len(types))
			for i, t := range types {
				h.Types[i] = t.DatabaseTypeName()
			}
			if err := start(h); err != nil {
				rows.Close()
				return err
			}
		}
		held, n, err := pageRows(ctx, rows, dest, vals, row)
		if err != nil {
			return valueError(err, h.Columns)
		}
		if n < size {
			return nil
		}
		// Size the next page to about pageBytes.
		size = min(max(pageBytes*n/max(held, 1), minPage), maxPage)
	}
}

// maxValueBytes bounds one string, blob or bit string of a result. A
// value is copied whole into Go, and once more by a renderer that escapes
// it, while a page holds about pageBytes; without the bound a single
// value of repeat('x', 1500000000) took 6 GB at a memory limit of 2 GB.
const maxValueBytes = 64 << 20

// tooLargeMark starts the message of the error a page raises at a value
// past maxValueBytes, followed by the column's index and the value's
// bytes, for valueError to read.
const tooLargeMark = "meterstore: value too large: "

// guardedColumns returns the select list of a page of resultTable, whose
// columns have types: every column by its position, with a string, blob
// or bit string past maxValueBytes raising an error inside DuckDB instead
// of being handed to Go. The result's nested values (lists, structs, maps)
// are not measured.
func guardedColumns(types []duckdb.Type) string {
	list := make([]string, len(types))
	for i, typ := range types {
		// By position: a repeated name of the statement's is renamed in
		// the table.
		col := `#` + strconv.Itoa(i+1)
		size := ""
		switch typ {
		case duckdb.TYPE_VARCHAR: // JSON too
			size = `strlen(` + col + `)`
		case duckdb.TYPE_BLOB:
			size = `octet_length(` + col + `)`
		case duckdb.TYPE_BIT:
			size = `bit_length(` + col + `) // 8`
		}
		if size != "" {
			col = fmt.Sprintf(`CASE WHEN %s > %d THEN error('%s%d ' || %s) ELSE %s END`, size, maxValueBytes, tooLargeMark, i, size, col)
		}
		list[i] = col
	}
	return strings.Join(list, ", ")
}

// tableColumns returns the names and types of resultTable's columns.
func tableColumns(ctx context.Context, conn *sql.Conn) ([]string, []duckdb.Type, error) {
	rows, err := conn.QueryContext(ctx, `SELECT * FROM `+resultTable+` LIMIT 0`)
	if err != nil {
		return nil, nil, fmt.Errorf("query: the result's columns: %w", err)
	}
	defer rows.Close()
	names, err := rows.Columns()
	if err != nil {
		return nil, nil, fmt.Errorf("query: the result's columns: %w", err)
	}
	types := make([]duckdb.Type, len(names))
	cts, err := rows.ColumnTypes()
	if err != nil || len(cts) != len(names) {
		return nil, nil, fmt.Errorf("query: the result's columns: %v", err)
	}
	for i, ct := range cts {
		switch ct.DatabaseTypeName() {
		case "VARCHAR", "JSON":
			types[i] = duckdb.TYPE_VARCHAR
		case "BLOB":
			types[i] = duckdb.TYPE_BLOB
		case "BIT":
			types[i] = duckdb.TYPE_BIT
		}
	}
	return names, types, rows.Err()
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

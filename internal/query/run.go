package query

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math/big"
	"slices"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// run prepares the statement, refuses it unless DuckDB calls it a SELECT,
// runs it, completes h with its columns and hands h to start and each row
// to row. analyze has made sure it is one statement: the driver would run
// every statement before the last on Prepare. The context is checked while
// rows are fetched too: DuckDB has computed the result by then, but handing
// a large one to Go takes time of its own.
func run(ctx context.Context, conn *sql.Conn, query string, h *Header, start func(*Header) error, row func([]any) error) error {
	return conn.Raw(func(dc any) error {
		st, err := dc.(driver.ConnPrepareContext).PrepareContext(ctx, query)
		if err != nil {
			return classify(err)
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
		rows, err := ds.QueryContext(ctx, nil)
		if err != nil {
			return classify(err)
		}
		defer rows.Close()
		h.Columns = rows.Columns()
		h.Types = make([]string, len(h.Columns))
		if tn, ok := rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
			for i := range h.Types {
				h.Types[i] = tn.ColumnTypeDatabaseTypeName(i)
			}
		}
		if err := start(h); err != nil {
			return err
		}
		dest := make([]driver.Value, len(h.Columns))
		vals := make([]any, len(dest))
		for n := 0; ; n++ {
			if n%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("query: %w", context.Cause(ctx))
				}
			}
			err := rows.Next(dest)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("query: %w", err)
			}
			for i, v := range dest {
				vals[i] = v
			}
			if err := row(vals); err != nil {
				return err
			}
		}
	})
}

// classify wraps an error of DuckDB preparing or running the statement:
// ErrInvalidQuery for what the statement's text is to blame for, the
// error alone for the rest.
func classify(err error) error {
	var de *duckdb.Error
	if errors.As(err, &de) {
		switch de.Type {
		case duckdb.ErrorTypeParser, duckdb.ErrorTypeSyntax, duckdb.ErrorTypeBinder, duckdb.ErrorTypeCatalog:
			return fmt.Errorf("%w: %w", ErrInvalidQuery, err)
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

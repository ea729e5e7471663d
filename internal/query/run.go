package query

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math/big"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// limits bound a result held in memory: its rows, and its approximate
// bytes in Go's heap.
type limits struct {
	rows  int
	bytes int64
}

// run prepares the statement, refuses it unless DuckDB calls it a SELECT,
// and runs it into res, failing with ErrTooManyRows past lim.rows rows and
// with ErrResultTooLarge past lim.bytes bytes. analyze has made sure it is
// one statement: the driver would run every statement before the last on
// Prepare. The context is checked while rows are collected too: DuckDB
// has computed the result by then, but copying a large one into Go takes
// time of its own.
func run(ctx context.Context, conn *sql.Conn, query string, lim limits, res *Result) error {
	return conn.Raw(func(dc any) error {
		st, err := dc.(driver.ConnPrepareContext).PrepareContext(ctx, query)
		if err != nil {
			return fmt.Errorf("query: %w", err)
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
			return fmt.Errorf("query: %w", err)
		}
		defer rows.Close()
		res.Columns = rows.Columns()
		res.Types = make([]string, len(res.Columns))
		if tn, ok := rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
			for i := range res.Types {
				res.Types[i] = tn.ColumnTypeDatabaseTypeName(i)
			}
		}
		dest := make([]driver.Value, len(res.Columns))
		var held int64
		for n := 0; ; n++ {
			if n%1024 == 0 {
				if err := ctx.Err(); err != nil {
					res.Rows = nil
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
			if len(res.Rows) == lim.rows {
				res.Rows = nil
				return fmt.Errorf("%w: more than %d; aggregate, or add a LIMIT", ErrTooManyRows, lim.rows)
			}
			row := make([]any, len(dest))
			held += rowOverhead + int64(len(dest))*valueOverhead
			for i, v := range dest {
				row[i] = v
				held += valueSize(v)
			}
			if held > lim.bytes {
				res.Rows = nil
				return fmt.Errorf("%w: more than %d bytes after %d rows; aggregate, select fewer columns, or add a LIMIT",
					ErrResultTooLarge, lim.bytes, n+1)
			}
			res.Rows = append(res.Rows, row)
		}
	})
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

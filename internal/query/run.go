package query

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"

	"github.com/duckdb/duckdb-go/v2"
)

// run prepares the statement, refuses it unless DuckDB calls it a SELECT,
// and runs it into res, failing with ErrTooManyRows past max rows. analyze
// has made sure it is one statement: the driver would run every statement
// before the last on Prepare.
func run(ctx context.Context, conn *sql.Conn, query string, max int, res *Result) error {
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
		for {
			err := rows.Next(dest)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("query: %w", err)
			}
			if len(res.Rows) == max {
				res.Rows = nil
				return fmt.Errorf("%w: more than %d; aggregate, or add a LIMIT", ErrTooManyRows, max)
			}
			row := make([]any, len(dest))
			for i, v := range dest {
				row[i] = v
			}
			res.Rows = append(res.Rows, row)
		}
	})
}

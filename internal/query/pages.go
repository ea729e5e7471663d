package query

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// Pages of the result table bound what DuckDB materialises and duckdb-go
// hands over at once: about pageBytes of values as measured (see
// rowSize), at most maxPage rows, and one row alone where that row holds
// more. The bytes of each row are known before its page is read, so a
// page never holds more than pageBytes or one row, whatever the rows
// before it held: a result of rows of 60 MB each is read a row at a time.
const (
	maxPage   = 65536
	pageBytes = 8 << 20
)

// A pager cuts the result table into pages by the measured bytes of its
// rows: a fixed number of rows when every row holds the same bytes, else
// by the bytes of blocks of blockRows rows, summed inside DuckDB for many
// blocks at once, and, in a block that holds more than a page, by the
// bytes of each of its rows.
type pager struct {
	blocks *sql.Stmt // per block of the rows from $1 to $2: its rows and bytes
	// rows gives the bytes of each row from $1 to $2, with its rowid: the
	// statement rowsSQL, prepared when a block first holds more than a
	// page, which few results have.
	rows    *sql.Stmt
	rowsSQL string
	conn    *sql.Conn
	fixed   int64  // the bytes of every row when blocks is nil
	ahead   []span // the rows from the next page on, in order
	end     bool   // ahead reaches the last row
}

// A span is a run of rows whose bytes the pager knows: a block, or a row.
type span struct{ rows, bytes int64 }

// blockRows is the rows of a block; blockWindow the rows whose blocks one
// query sums, a thousand blocks.
const (
	blockRows   = 1024
	blockWindow = 1024 * blockRows
)

// A result is what fetch knows of resultTable: the types of the
// statement's columns (nil: the table's), and the SQL of the sizes
// create stored in a last column, empty if it stored none.
type result struct {
	types []duckdb.TypeInfo
	sizes string
}

// newPager prepares the pages of resultTable, whose columns have types:
// by the sizes stored, if they are those of the types, else by the
// sizes measured from the values.
func newPager(ctx context.Context, conn *sql.Conn, types []duckdb.TypeInfo, stored string) (*pager, error) {
	size, fixed, varies := rowSize(types)
	if !varies {
		return &pager{fixed: fixed}, nil
	}
	if stored == size {
		size = rowBytesColumn
	}
	sized := `(SELECT rowid, ` + size + ` AS bytes FROM ` + resultTable + ` WHERE rowid >= $1 AND rowid < $2)`
	blocks, err := conn.PrepareContext(ctx, fmt.Sprintf(`SELECT rowid // %d AS b, count(*), CAST(sum(bytes) AS BIGINT)
		FROM %s GROUP BY b ORDER BY b`, blockRows, sized))
	if err != nil {
		return nil, fmt.Errorf("query: the result's row sizes: %w", err)
	}
	return &pager{blocks: blocks, conn: conn, rowsSQL: `SELECT rowid, bytes FROM ` + sized + ` ORDER BY rowid`}, nil
}

func (p *pager) close() {
	if p.blocks != nil {
		p.blocks.Close()
	}
	if p.rows != nil {
		p.rows.Close()
	}
}

// page returns the end hi of the page that starts at row lo, which is the
// row after the last page's, and whether it is the last page; a page of
// fixed rows is the last when it is shorter than asked for. A page holds
// at most pageBytes and maxPage rows, or one row where that row holds
// more. A row past maxRowBytes fails with ErrResultTooLarge, a value past
// maxValueBytes with the error valueError reads.
func (p *pager) page(ctx context.Context, lo int64) (hi int64, last bool, err error) {
	if p.blocks == nil {
		return lo + min(max(pageBytes/max(p.fixed, 1), 1), maxPage), false, nil
	}
	var n, bytes int64
	for {
		if len(p.ahead) == 0 && !p.end {
			if err := p.readBlocks(ctx, lo+n); err != nil {
				return 0, false, err
			}
		}
		if len(p.ahead) == 0 {
			break
		}
		s := p.ahead[0]
		if s.rows > 1 && s.bytes > pageBytes {
			// A block of more than a page: row by row.
			if err := p.readRows(ctx, lo+n, s.rows); err != nil {
				return 0, false, err
			}
			continue
		}
		if s.rows == 1 && s.bytes > maxRowBytes && n == 0 {
			return 0, false, fmt.Errorf("%w: row %d of the result holds about %d bytes, more than the %d one row may hold; select fewer or smaller columns",
				ErrResultTooLarge, lo+1, s.bytes, maxRowBytes)
		}
		if n > 0 && (bytes+s.bytes > pageBytes || n+s.rows > maxPage) {
			break
		}
		n, bytes = n+s.rows, bytes+s.bytes
		p.ahead = p.ahead[1:]
	}
	return lo + n, p.end && len(p.ahead) == 0, nil
}

// readBlocks reads the blocks of up to blockWindow rows from lo.
func (p *pager) readBlocks(ctx context.Context, lo int64) error {
	rows, err := p.blocks.QueryContext(ctx, lo, lo+blockWindow)
	if err != nil {
		return classify(err)
	}
	defer rows.Close()
	var total int64
	for rows.Next() {
		var b int64
		var s span
		if err := rows.Scan(&b, &s.rows, &s.bytes); err != nil {
			return fmt.Errorf("query: the result's row sizes: %w", err)
		}
		p.ahead = append(p.ahead, s)
		total += s.rows
	}
	if err := rows.Err(); err != nil {
		return classify(err)
	}
	p.end = total < blockWindow
	return nil
}

// readRows replaces the first span ahead, the n rows from lo, by a span of
// each row.
func (p *pager) readRows(ctx context.Context, lo, n int64) error {
	if p.rows == nil {
		st, err := p.conn.PrepareContext(ctx, p.rowsSQL)
		if err != nil {
			return fmt.Errorf("query: the result's row sizes: %w", err)
		}
		p.rows = st
	}
	rows, err := p.rows.QueryContext(ctx, lo, lo+n)
	if err != nil {
		return classify(err)
	}
	defer rows.Close()
	each := make([]span, 0, n)
	for rows.Next() {
		var id int64
		s := span{rows: 1}
		if err := rows.Scan(&id, &s.bytes); err != nil {
			return fmt.Errorf("query: the result's row sizes: %w", err)
		}
		each = append(each, s)
	}
	if err := rows.Err(); err != nil {
		return classify(err)
	}
	if int64(len(each)) != n {
		return fmt.Errorf("query: the result's row sizes: %d rows from %d, want %d", len(each), lo, n)
	}
	p.ahead = append(each, p.ahead[1:]...)
	return nil
}

// fetch reads resultTable a page at a time in the order its rows were
// inserted, the statement's order, and hands h to start before the first
// row and each row to row. types are the table's column types; if nil,
// they are read from the table, and so are h.Columns if nil or not as
// many. The context is checked between pages and every 1024 rows: handing
// a large result to Go takes time of its own. The rows of the table are
// numbered from 0 without gaps. seen, if set, learns the rows and the
// bytes (as valueSize counts them) of each page, as they came. A failure
// of DuckDB reading the pages is classified: one past the memory limit
// is the statement's, not the engine's.
func fetch(ctx context.Context, conn *sql.Conn, h *Header, res result, start func(*Header) error, row func([]any) error, seen func(rows, bytes int64)) error {
	begin := time.Now()
	types := res.types
	if types == nil {
		names, t, err := tableColumns(ctx, conn)
		if err != nil {
			return err
		}
		if res.sizes != "" {
			names, t = names[:len(names)-1], t[:len(t)-1]
		}
		if h.Columns == nil || len(names) != len(h.Columns) {
			h.Columns = names
		}
		types = t
	}
	cols := make([]string, len(types))
	for i := range cols {
		// By position: a repeated name of the statement's is renamed in
		// the table.
		cols[i] = `#` + strconv.Itoa(i+1)
	}
	page, err := conn.PrepareContext(ctx, `SELECT `+strings.Join(cols, ", ")+` FROM `+resultTable+` WHERE rowid >= ? AND rowid < ?`)
	if err != nil {
		return fmt.Errorf("query: %w", err)
	}
	defer page.Close()
	p, err := newPager(ctx, conn, types, res.sizes)
	if err != nil {
		return err
	}
	defer p.close()
	vals := make([]any, len(h.Columns))
	dest := make([]any, len(vals))
	for i := range dest {
		dest[i] = &vals[i]
	}
	for lo := int64(0); ; {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("query: %w", context.Cause(ctx))
		}
		hi, last, err := p.page(ctx, lo)
		if err != nil {
			return valueError(err, h.Columns)
		}
		rows, err := page.QueryContext(ctx, lo, hi)
		if err != nil {
			return classify(err)
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
			h.Timing.step(StepFirstPage, begin)
			if err := start(h); err != nil {
				rows.Close()
				return err
			}
		}
		held, n, err := pageRows(ctx, rows, dest, vals, row)
		if err != nil {
			return err
		}
		if seen != nil {
			seen(n, held)
		}
		if last || n < hi-lo {
			return nil
		}
		lo = hi
	}
}

// tableColumns returns the names and types of resultTable's columns.
func tableColumns(ctx context.Context, conn *sql.Conn) ([]string, []duckdb.TypeInfo, error) {
	names, types, err := columnsOfQuery(ctx, conn, `SELECT * FROM `+resultTable)
	if err != nil {
		return nil, nil, fmt.Errorf("query: the result's columns: %w", err)
	}
	return names, types, nil
}

package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/meterstore/meterstore/internal/resultfmt"
	"github.com/meterstore/meterstore/store"
)

// A printer writes the rows of a result in one format: table, csv or json
// (one object per row, its keys in column order; a column name given
// again is suffixed _2, _3, ..., the first free one, so that no value is
// lost to a repeated name, as in SELECT 1 AS a, 2 AS a).
type printer interface {
	// begin writes what comes before the rows of columns of the DuckDB
	// types types.
	begin(columns, types []string) error
	// row writes a row, values as duckdb-go returns them.
	row(vals []any) error
	// end writes what is held.
	end() error
	// holds reports whether the printer holds every row until end, as a
	// table does to align its columns.
	holds() bool
}

// newPrinter returns the printer of format to w.
func newPrinter(w io.Writer, format string) (printer, error) {
	switch format {
	case "table":
		return &tablePrinter{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}, nil
	case "csv":
		return &csvPrinter{cw: csv.NewWriter(w)}, nil
	case "json":
		return &jsonPrinter{w: bufio.NewWriterSize(w, 64<<10)}, nil
	}
	return nil, fmt.Errorf("--format %q: want table, csv or json", format)
}

// printStatement runs st and writes its rows with p: a printer that holds
// them gets the result held within query.max_rows and
// query.max_result_bytes, any other the rows as they stream, none held.
// It returns the result's header and the number of rows.
func printStatement(ctx context.Context, st *store.Statement, p printer) (*store.ResultHeader, int64, error) {
	if p.holds() {
		res, err := st.Query(ctx)
		if err != nil {
			return nil, 0, err
		}
		return &res.ResultHeader, int64(len(res.Rows)), printRows(p, res)
	}
	var (
		hd   *store.ResultHeader
		rows int64
	)
	err := st.Stream(ctx, func(h *store.ResultHeader) error {
		hd = h
		return p.begin(h.Columns, h.Types)
	}, func(vals []any) error {
		rows++
		return p.row(vals)
	})
	if err == nil {
		err = p.end()
	}
	return hd, rows, err
}

// printResult writes res, held whole, in format.
func printResult(w io.Writer, format string, res *store.Result) error {
	p, err := newPrinter(w, format)
	if err != nil {
		return err
	}
	return printRows(p, res)
}

// printRows writes the rows of res with p.
func printRows(p printer, res *store.Result) error {
	if err := p.begin(res.Columns, res.Types); err != nil {
		return err
	}
	for _, r := range res.Rows {
		if err := p.row(r); err != nil {
			return err
		}
	}
	return p.end()
}

// tablePrinter aligns the columns of every row, which it holds until end.
type tablePrinter struct {
	tw    *tabwriter.Writer
	types []string
}

func (t *tablePrinter) begin(columns, types []string) error {
	t.types = types
	_, err := fmt.Fprintln(t.tw, strings.Join(printableCells(columns), "\t"))
	return err
}

func (t *tablePrinter) row(vals []any) error {
	// For a terminal: a tab or line break in a value would break the
	// table, an escape sequence reach the terminal (printable.go). csv
	// and json quote what they hold.
	_, err := fmt.Fprintln(t.tw, strings.Join(printableCells(resultfmt.Cells(vals, t.types)), "\t"))
	return err
}

func (t *tablePrinter) end() error { return t.tw.Flush() }

func (t *tablePrinter) holds() bool { return true }

// csvPrinter writes a header row, then each row as it comes.
type csvPrinter struct {
	cw    *csv.Writer
	types []string
}

func (c *csvPrinter) begin(columns, types []string) error {
	c.types = types
	return c.cw.Write(columns)
}

func (c *csvPrinter) row(vals []any) error { return c.cw.Write(resultfmt.Cells(vals, c.types)) }

func (c *csvPrinter) end() error {
	c.cw.Flush()
	return c.cw.Error()
}

func (c *csvPrinter) holds() bool { return false }

// jsonPrinter writes each row as it comes, a JSON object a line, through
// a buffer of its own: a line as large as the buffer bypasses it.
type jsonPrinter struct {
	w *bufio.Writer
	j *resultfmt.JSONLines
}

func (j *jsonPrinter) begin(columns, types []string) error {
	j.j = resultfmt.NewJSONLines(columns, types)
	return nil
}

func (j *jsonPrinter) row(vals []any) error {
	line, err := j.j.Line(vals)
	if err != nil {
		return err
	}
	_, err = j.w.Write(line)
	return err
}

func (j *jsonPrinter) end() error { return j.w.Flush() }

func (j *jsonPrinter) holds() bool { return false }

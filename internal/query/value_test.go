package query

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestValueBound: a string, blob or bit string of more than maxValueBytes
// is refused inside DuckDB, before it is copied into Go, naming its
// column; Query and Stream alike, before the header and any row. One of
// maxValueBytes is handed over whole.
func TestValueBound(t *testing.T) {
	s := threeMonths(t)
	e, err := single(s.tab, s, Settings{Threads: 1, MemoryLimit: "1GB", CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	over := maxValueBytes + 1
	for _, c := range []struct{ sql, column string }{
		{fmt.Sprintf(`SELECT repeat('x', %d) AS s`, over), "s"},
		{fmt.Sprintf(`SELECT 'a' AS s, 1 AS n, repeat('x', %d)::BLOB AS s`, over), "s"},
		{fmt.Sprintf(`SELECT 1 AS n, CASE WHEN range = 2 THEN repeat('y', %d) ELSE 'short' END AS "text" FROM range(3)`, over), "text"},
		{fmt.Sprintf(`SELECT bitstring('1', %d) AS bits`, 8*over), "bits"},
		{fmt.Sprintf(`SELECT to_json(repeat('x', %d)) AS doc`, over-2), "doc"},
	} {
		want := fmt.Sprintf("a value of column %q has %d bytes, more than the %d one value may have", c.column, over, maxValueBytes)
		_, err := queryOf(t.Context(), e, c.sql)
		if !errors.Is(err, ErrResultTooLarge) || !strings.Contains(err.Error(), want) {
			t.Errorf("Query %.60s: %v; want %q", c.sql, err, want)
		}
		started, rows := false, 0
		err = streamOf(t.Context(), e, c.sql, func(*Header) error { started = true; return nil }, func([]any) error { rows++; return nil })
		if !errors.Is(err, ErrResultTooLarge) || !strings.Contains(err.Error(), want) || started || rows != 0 {
			t.Errorf("Stream %.60s: %v, started %v, %d rows; want %q before the header", c.sql, err, started, rows, want)
		}
	}
	// With a parameter, whose column's type the preparation may not know,
	// the bound comes from the result's own types.
	st, err := e.Prepare(t.Context(), `SELECT 1 AS n, repeat(?, ?) AS p`, PrepareOptions{Table: e.first(), Params: []any{"x", over}})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("a value of column %q has %d bytes", "p", over)
	if _, err := st.Query(t.Context()); !errors.Is(err, ErrResultTooLarge) || !strings.Contains(err.Error(), want) {
		t.Errorf("with parameters: %v; want %q", err, want)
	}
	res, err := queryOf(t.Context(), e, fmt.Sprintf(`SELECT repeat('x', %d) AS s, 'é' AS t`, maxValueBytes))
	if err != nil || len(res.Rows) != 1 || len(res.Rows[0][0].(string)) != maxValueBytes || res.Rows[0][1] != "é" {
		t.Errorf("a value of maxValueBytes: %v", err)
	}
}

package query

import (
	"database/sql"
	"errors"
	"strings"
	"testing"
)

// TestErrorsQuoteTheCaller: an error DuckDB places in a statement quotes
// the caller's line with the caret where DuckDB puts it when it runs the
// statement as written, never the statement MeterStore wraps it in; one of
// a statement that runs as DuckDB's rendering (it names a system relation)
// quotes nothing.
func TestErrorsQuoteTheCaller(t *testing.T) {
	s := threeMonths(t)
	e := newEngine(t, s)
	e.SetRelations([]Relation{{Schema: "system", Name: "tables", Columns: []Column{{"table", "VARCHAR"}}, Rows: [][]any{{"power"}}}})
	plain, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	nine := strings.Repeat("SELECT 1 AS a,\n", 1) + strings.Repeat("  2 AS b,\n", 7) + "  $1::INT AS x"
	ten := nine + ",\n  $2::INT AS y"
	for _, c := range []struct {
		sql    string
		params []any
		line   string
	}{
		{`SELECT $1::INT AS x`, []any{"abc"}, "LINE 1: "},
		{"SELECT 1 AS a,\n  $1::INT AS x", []any{"abc"}, "LINE 2: "},
		{nine, []any{"abc"}, "LINE 9: "},
		{ten, []any{1, "abc"}, "LINE 10: "},
		{`SELECT nosuch AS x`, nil, "LINE 1: "},
	} {
		st, err := e.Prepare(t.Context(), c.sql, PrepareOptions{Table: e.first(), Params: c.params})
		if err == nil {
			_, err = st.Query(t.Context())
		}
		if !errors.Is(err, ErrInvalidQuery) {
			t.Fatalf("%q: %v; want an invalid statement", c.sql, err)
		}
		_, werr := plain.QueryContext(t.Context(), c.sql, c.params...)
		if werr == nil {
			t.Fatalf("%q: no error from DuckDB itself", c.sql)
		}
		want := werr.Error()[strings.LastIndex(werr.Error(), "\n\nLINE "):]
		if got := err.Error(); !strings.HasSuffix(got, want) || !strings.Contains(want, c.line) || strings.Contains(got, resultTable) {
			t.Errorf("%q:\n%s\nwant it to end as DuckDB's own:\n%s", c.sql, got, want)
		}
	}
	// A statement that names a system relation runs as DuckDB's
	// rendering: its lines are not the caller's.
	_, err = queryOf(t.Context(), e, "SELECT \"table\",\n  nosuch FROM system.tables")
	if !errors.Is(err, ErrInvalidQuery) || !strings.Contains(err.Error(), "nosuch") ||
		strings.Contains(err.Error(), "LINE") || strings.Contains(err.Error(), `"system"`) {
		t.Errorf("a statement of a system relation: %v", err)
	}
}

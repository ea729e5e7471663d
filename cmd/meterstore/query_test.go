package main

import (
	"bytes"
	"database/sql"
	"os"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/meterstore/meterstore/store"
)

// duckResult runs query on an in-memory DuckDB and returns its result
// with the values as duckdb-go returns them, as the query engine does.
func duckResult(t *testing.T, query string) *store.Result {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(t.Context(), query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	res := &store.Result{}
	res.Columns, _ = rows.Columns()
	types, _ := rows.ColumnTypes()
	for _, ty := range types {
		res.Types = append(res.Types, ty.DatabaseTypeName())
	}
	for rows.Next() {
		row := make([]any, len(res.Columns))
		dest := make([]any, len(row))
		for i := range row {
			dest[i] = &row[i]
		}
		if err := rows.Scan(dest...); err != nil {
			t.Fatal(err)
		}
		res.Rows = append(res.Rows, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return res
}

// TestPrintResult: no value is lost to a repeated column name in JSON; a
// UUID prints as its text, an infinite timestamp or date as infinity, a
// date as a date.
func TestPrintResult(t *testing.T) {
	res := duckResult(t, `SELECT 1 AS a, 2 AS a, 3 AS a_2, NULL AS n, 1.5::DECIMAL(18,6) AS v,
		UUID '0190a5f4-1234-7abc-8def-0123456789ab' AS u,
		TIMESTAMPTZ '2026-04-10 01:02:03.5+00' AS ts,
		'infinity'::TIMESTAMPTZ AS inf, '-infinity'::TIMESTAMPTZ AS ninf, 'infinity'::TIMESTAMP AS tinf,
		DATE '2026-04-10' AS d, 'infinity'::DATE AS dinf, '-infinity'::DATE AS dninf, TIME '12:34:56.25' AS tm`)
	for _, c := range []struct{ format, want string }{
		{"json", `{"a":1,"a_3":2,"a_2":3,"n":null,"v":"1.5","u":"0190a5f4-1234-7abc-8def-0123456789ab",` +
			`"ts":"2026-04-10T01:02:03.5Z","inf":"infinity","ninf":"-infinity","tinf":"infinity",` +
			`"d":"2026-04-10","dinf":"infinity","dninf":"-infinity","tm":"12:34:56.25"}` + "\n"},
		{"csv", "a,a,a_2,n,v,u,ts,inf,ninf,tinf,d,dinf,dninf,tm\n" +
			"1,2,3,,1.5,0190a5f4-1234-7abc-8def-0123456789ab,2026-04-10T01:02:03.5Z,infinity,-infinity,infinity,2026-04-10,infinity,-infinity,12:34:56.25\n"},
		{"table", "a  a  a_2  n  v    u                                     ts                      inf       ninf       tinf      d           dinf      dninf      tm\n" +
			"1  2  3       1.5  0190a5f4-1234-7abc-8def-0123456789ab  2026-04-10T01:02:03.5Z  infinity  -infinity  infinity  2026-04-10  infinity  -infinity  12:34:56.25\n"},
	} {
		var b bytes.Buffer
		if err := printResult(&b, c.format, res); err != nil {
			t.Fatal(err)
		}
		if b.String() != c.want {
			t.Errorf("--format %s:\ngot  %q\nwant %q", c.format, b.String(), c.want)
		}
	}
}

// TestQueryInvalidSQL: SQL DuckDB cannot parse or bind is the caller's
// mistake: exit 1 (permanent), with a message naming the problem.
func TestQueryInvalidSQL(t *testing.T) {
	dir := t.TempDir()
	cfgPath, _ := deploymentConfig(t, dir)
	c := []string{"-c", cfgPath}
	mustRun(t, append([]string{"create", "--now", "2026-03-01T00:00:00Z"}, c...)...)
	for sql, names := range map[string]string{
		`SELECT nonexistent FROM readings`:      "nonexistent",
		`SELECT count(*) FROM readings WHERE (`: "syntax error",
	} {
		out, code := run(t, append([]string{"query", "--table", "power", "--refresh=false", "--now", "2026-03-02T00:00:00Z", sql}, c...)...)
		if code != exitPermanent || !strings.Contains(out, names) || !strings.Contains(out, "invalid statement") {
			t.Errorf("%s: exit %d, want %d naming %q\n%s", sql, code, exitPermanent, names, out)
		}
	}
}

// TestQueryParams: a column that is a --param's keeps its name (DuckDB
// prepares it as "unknown"); a --param no placeholder takes is refused,
// exit 1, naming it.
func TestQueryParams(t *testing.T) {
	dir := t.TempDir()
	cfgPath, _ := deploymentConfig(t, dir)
	c := []string{"-c", cfgPath}
	mustRun(t, append([]string{"create", "--now", "2026-03-01T00:00:00Z"}, c...)...)
	out := mustRun(t, append([]string{"query", "--refresh=false", "--format", "csv", "--param", "abc", `SELECT $1 AS x`}, c...)...)
	if !strings.HasPrefix(out, "x\nabc\n") {
		t.Errorf("query --param abc 'SELECT $1 AS x':\n%s", out)
	}
	out, code := run(t, append([]string{"query", "--refresh=false", "--param", "abc", "--param", "extra", `SELECT $1 AS x`}, c...)...)
	if code != exitPermanent || !strings.Contains(out, "a value is given for $2") {
		t.Errorf("query with a --param too many: exit %d, want %d\n%s", code, exitPermanent, out)
	}
}

// TestQueryStreams: --format csv and json write the rows as they come,
// holding none, so that query.max_rows and query.max_result_bytes, which
// bound a result held, do not refuse a larger one; --format table, which
// holds the result to align it, is refused past them.
func TestQueryStreams(t *testing.T) {
	dir := t.TempDir()
	cfgPath, _ := deploymentConfig(t, dir)
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	small := strings.Replace(strings.Replace(string(cfg), `max_rows = 1000000`, `max_rows = 100`, 1), `max_result_bytes = "1GiB"`, `max_result_bytes = "1MiB"`, 1)
	if small == string(cfg) {
		t.Fatal("the template's [query] bounds moved")
	}
	if err := os.WriteFile(cfgPath, []byte(small), 0o644); err != nil {
		t.Fatal(err)
	}
	c := []string{"-c", cfgPath}
	mustRun(t, append([]string{"create", "--now", "2026-03-01T00:00:00Z"}, c...)...)
	for _, q := range []struct{ sql, what string }{
		{`SELECT range AS i FROM range(1000)`, "rows"},
		{`SELECT range AS i, repeat('x', 20000) AS s FROM range(90)`, "bytes"},
	} {
		for format, lines := range map[string]int{"csv": 1, "json": 0} {
			out, code := run(t, append([]string{"query", "--refresh=false", "--format", format, q.sql}, c...)...)
			n := strings.Count(out, "\n") - lines // the header; the line after the result goes to stderr
			if code != 0 || (q.what == "rows" && n != 1000) || (q.what == "bytes" && n != 90) {
				t.Errorf("--format %s, a result past max_%s: exit %d, %d lines\n%.300s", format, q.what, code, n, out)
			}
		}
		out, code := run(t, append([]string{"query", "--refresh=false", "--format", "table", q.sql}, c...)...)
		if code != exitPermanent || !strings.Contains(out, "too") {
			t.Errorf("--format table, a result past max_%s: exit %d\n%.300s", q.what, code, out)
		}
	}
}

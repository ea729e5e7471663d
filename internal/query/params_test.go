package query

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestParams: a statement with bound parameters ($1, ?, $name) answers
// what the same statement with the values written as literals answers,
// reads the tiers for the same range of "from" and the same market
// locations (the analysis takes bound values as constants), and a value
// that looks like SQL stays a value.
func TestParams(t *testing.T) {
	s := threeMonths(t)
	e := newEngine(t, s)
	run := func(sql string, params ...any) ([]string, []string, error) {
		st, err := e.Prepare(t.Context(), sql, PrepareOptions{Table: e.first(), Params: params})
		if err != nil {
			return nil, nil, err
		}
		var rows []string
		err = st.Stream(t.Context(), func(*Header) error { return nil }, func(v []any) error {
			rows = append(rows, fmt.Sprint(v))
			return nil
		})
		return rows, s.Calls(), err
	}
	lo, hi := time.Date(2026, 2, 28, 23, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 1, 0, 0, 0, time.UTC)
	literal := `SELECT malo_id, count(*), sum(value) FROM readings WHERE "from" >= TIMESTAMPTZ '2026-02-28 23:00:00+00'
		AND "from" < TIMESTAMPTZ '2026-03-01 01:00:00+00' AND malo_id = '` + malo(1) + `' GROUP BY 1`
	want, wantCalls, err := run(literal)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 1 || len(wantCalls) < 3 {
		t.Fatalf("literal: %v %v", want, wantCalls)
	}
	for _, c := range []struct {
		sql    string
		params []any
	}{
		{`SELECT malo_id, count(*), sum(value) FROM readings WHERE "from" >= $1 AND "from" < $2 AND malo_id = $3 GROUP BY 1`,
			[]any{lo, hi, malo(1)}},
		{`SELECT malo_id, count(*), sum(value) FROM readings WHERE "from" >= ? AND "from" < ? AND malo_id = ? GROUP BY 1`,
			[]any{lo, hi, malo(1)}},
		{`SELECT malo_id, count(*), sum(value) FROM readings WHERE "from" >= CAST($lo AS TIMESTAMPTZ) AND "from" < $hi AND malo_id = $malo GROUP BY 1`,
			[]any{sql.Named("lo", "2026-02-28 23:00:00+00"), sql.Named("hi", hi), sql.Named("malo", malo(1))}},
	} {
		got, calls, err := run(c.sql, c.params...)
		if err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", c.sql, got, want)
		}
		if !slices.Equal(calls, wantCalls) {
			t.Errorf("%s: read\n %v\nwant the literal's\n %v", c.sql, calls, wantCalls)
		}
	}

	// A value that looks like SQL is a value: it matches no market
	// location, and nothing runs.
	for _, evil := range []string{`' OR '1'='1`, `x'; DROP VIEW readings; --`, `') UNION SELECT 1, 1, 1 --`} {
		got, _, err := run(`SELECT malo_id, count(*), sum(value) FROM readings WHERE malo_id = $1 GROUP BY 1`, evil)
		if err != nil || len(got) != 0 {
			t.Errorf("malo_id = %q: %v %v; want no rows", evil, got, err)
		}
	}
	// A placeholder without a value is the statement's mistake.
	if _, _, err := run(`SELECT count(*) FROM readings WHERE "from" >= $1`); !errors.Is(err, ErrInvalidQuery) {
		t.Errorf("a placeholder without a value: %v", err)
	}
}

// TestParamColumns: a column that is a parameter's, whose type DuckDB
// learns only from the value bound, comes out with its name, type and
// value, as do the columns of a statement whose parameters change a
// column's type.
func TestParamColumns(t *testing.T) {
	s := threeMonths(t)
	e := newEngine(t, s)
	for _, c := range []struct {
		sql          string
		params       []any
		names, types []string
		row          string
	}{
		// One column, a parameter's: DuckDB prepares it as "unknown".
		{`SELECT $1 AS x`, []any{"abc"}, []string{"x"}, []string{"VARCHAR"}, "[abc]"},
		{`SELECT $1 AS x, $2 AS y`, []any{"abc", int64(2)}, []string{"x", "y"}, []string{"VARCHAR", "BIGINT"}, "[abc 2]"},
		{`SELECT 1 AS n, repeat(?, ?) AS p`, []any{"x", 3}, []string{"n", "p"}, []string{"INTEGER", "VARCHAR"}, "[1 xxx]"},
		{`SELECT ? AS a, ? AS a`, []any{"x", 2.5}, []string{"a", "a_1"}, []string{"VARCHAR", "DOUBLE"}, "[x 2.5]"},
		{`SELECT CAST(? AS VARCHAR) AS a, 7 AS a`, []any{"x"}, []string{"a", "a"}, []string{"VARCHAR", "INTEGER"}, "[x 7]"},
	} {
		st, err := e.Prepare(t.Context(), c.sql, PrepareOptions{Table: e.first(), Params: c.params})
		if err != nil {
			t.Fatal(err)
		}
		res, err := st.Query(t.Context())
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		if !slices.Equal(res.Columns, c.names) || !slices.Equal(res.Types, c.types) || len(res.Rows) != 1 || fmt.Sprint(res.Rows[0]) != c.row {
			t.Errorf("%s: %v %v %v; want %v %v %s", c.sql, res.Columns, res.Types, res.Rows, c.names, c.types, c.row)
		}
	}
}

// TestParamsUnused: a value no parameter of the statement takes (one
// more than it has, a number it skips, a name it does not have) is
// refused as the caller's mistake, naming it, before anything is read.
func TestParamsUnused(t *testing.T) {
	s := threeMonths(t)
	e := newEngine(t, s)
	for _, c := range []struct {
		sql    string
		params []any
		name   string
	}{
		{`SELECT 1 AS x`, []any{"a"}, "$1"},
		{`SELECT $1 AS x`, []any{"a", "b"}, "$2"},
		{`SELECT ? AS x`, []any{"a", "b"}, "$2"},
		{`SELECT $2 AS x`, []any{"a", "b"}, "$1"},
		{`SELECT $a AS x`, []any{sql.Named("a", 1), sql.Named("b", 2)}, "$b"},
		{`SELECT count(*) FROM readings WHERE malo_id = $1`, []any{malo(1), "extra"}, "$2"},
	} {
		_, err := e.Prepare(t.Context(), c.sql, PrepareOptions{Table: e.first(), Params: c.params})
		if !errors.Is(err, ErrInvalidQuery) || !strings.Contains(err.Error(), "a value is given for "+c.name) {
			t.Errorf("%s with %v: %v; want an invalid statement naming %s", c.sql, c.params, err, c.name)
		}
		if calls := s.Calls(); len(calls) != 0 {
			t.Errorf("%s: read %v", c.sql, calls)
		}
	}
	// As many values as parameters, each used, however often.
	for _, c := range []struct {
		sql    string
		params []any
	}{
		{`SELECT $1 AS x, $1 AS y, $2 AS z`, []any{"a", 2}},
		{`SELECT $a AS x, $a AS y, $b AS z`, []any{sql.Named("a", 1), sql.Named("b", 2)}},
	} {
		st, err := e.Prepare(t.Context(), c.sql, PrepareOptions{Table: e.first(), Params: c.params})
		if err != nil {
			t.Fatalf("%s, every value used: %v", c.sql, err)
		}
		st.Close()
	}
}

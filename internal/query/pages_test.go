package query

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestPagesBoundedInBytes: a page of a streamed result holds at most
// pageBytes of values as Go counts them, or one row where that row holds
// more, whatever the rows before it held: rows of 20 MB come a row at a
// time (the first page held 4,096 rows, all of them), rows of mixed sizes
// and lists of 20,000 elements in pages of about pageBytes, and fixed-size
// rows in pages of at most maxPage rows.
func TestPagesBoundedInBytes(t *testing.T) {
	s := threeMonths(t)
	e, err := single(s.tab, s, Settings{Threads: 1, MemoryLimit: "1GB", CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	type page struct{ rows, bytes int64 }
	var pages []page
	e.pages = func(rows, bytes int64) { pages = append(pages, page{rows, bytes}) }
	for _, c := range []struct {
		sql  string
		rows int64
	}{
		{`SELECT repeat('x', 20000000) || range AS s FROM range(12)`, 12},
		{`SELECT range AS i, CASE WHEN range % 100 = 0 THEN repeat('y', 3000000) ELSE 'x' END AS s FROM range(10000)`, 10000},
		{`SELECT range AS i, list_transform(range(20000), lambda x: x + range) AS l FROM range(100)`, 100},
		{`SELECT range AS i, {'a': range, 'b': repeat('z', 1000000)} AS st FROM range(40)`, 40},
		{`SELECT range AS i, range * 2 AS j FROM range(200000)`, 200000},
	} {
		// Measured as DuckDB computes the result, and, where the
		// statement cannot be a subquery, from the values stored.
		for _, stmt := range []string{c.sql, c.sql + "; -- unguarded"} {
			pages = nil
			var n int64
			err := streamOf(t.Context(), e, stmt, func(*Header) error { return nil }, func([]any) error { n++; return nil })
			if err != nil || n != c.rows {
				t.Fatalf("%s: %d rows, %v", stmt, n, err)
			}
			var total int64
			for i, p := range pages {
				total += p.rows
				if p.rows > maxPage || p.bytes > pageBytes && p.rows > 1 || p.rows == 0 && i < len(pages)-1 {
					t.Errorf("%.60s: page %d of %d holds %d rows, %d bytes; want at most %d bytes or one row, at most %d rows",
						stmt, i+1, len(pages), p.rows, p.bytes, pageBytes, maxPage)
				}
			}
			if total != c.rows {
				t.Errorf("%.60s: the pages hold %d rows, want %d", stmt, total, c.rows)
			}
		}
	}
}

// TestRowBound: a row past maxRowBytes is refused naming the bound,
// before the header, though none of its values passes maxValueBytes.
func TestRowBound(t *testing.T) {
	s := threeMonths(t)
	e, err := single(s.tab, s, Settings{Threads: 1, MemoryLimit: "512MB", CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	v := maxRowBytes/3 + 1
	q := fmt.Sprintf(`SELECT range AS i, repeat('a', %d) AS a, repeat('b', %d) AS b, repeat('c', %d) AS c FROM range(2)`, v, v, v)
	started := false
	err = streamOf(t.Context(), e, q, func(*Header) error { started = true; return nil }, func([]any) error { return nil })
	want := fmt.Sprintf("row 1 of the result holds about %d bytes, more than the %d one row may hold", rowOverhead+4*valueOverhead+8+3*int64(v), maxRowBytes)
	if !errors.Is(err, ErrResultTooLarge) || !strings.Contains(err.Error(), want) || started {
		t.Errorf("a row of three values of %d bytes: %v, started %v; want %q before the header", v, err, started, want)
	}
}

// TestValueRefusedBeforeStored: a value past maxValueBytes is refused as
// DuckDB computes it, before the result table holds it (refusing
// repeat('x', 1500000000) took 68 s and 4.5 GB when the table took the
// value first and the page refused it); a statement that cannot be a
// subquery (a trailing semicolon and comment) is still refused, when its
// page is measured.
func TestValueRefusedBeforeStored(t *testing.T) {
	inst, err := open(t.Context(), Settings{Threads: 1, MemoryLimit: "256MB", CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.close()
	q := fmt.Sprintf(`SELECT range AS i, CASE WHEN range = 1 THEN repeat('x', %d) ELSE 'short' END AS s FROM range(3)`, maxValueBytes+1)
	names, types, err := check(t.Context(), inst.conn, q, false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = create(t.Context(), inst.conn, runSpec{sql: q}, names, types)
	want := fmt.Sprintf("a value of column %q has %d bytes", "s", maxValueBytes+1)
	if err == nil {
		t.Fatalf("create stored the result: want %q", want)
	}
	if err = valueError(err, names); !errors.Is(err, ErrResultTooLarge) || !strings.Contains(err.Error(), want) {
		t.Fatalf("create: %v; want %q", err, want)
	}
	var n int
	if err := inst.conn.QueryRowContext(t.Context(), `SELECT count(*) FROM duckdb_tables() WHERE table_name = '`+resultTable+`'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the refused result's table: %d, %v; want none", n, err)
	}

	s := threeMonths(t)
	e := newEngine(t, s)
	for _, trailing := range []string{";", "; -- the end", "\n-- the end"} {
		_, err := queryOf(t.Context(), e, q+trailing)
		if !errors.Is(err, ErrResultTooLarge) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q after the statement: %v; want %q", trailing, err, want)
		}
	}
}

// TestGuardedColumnsKeepTheResult: the guarded form of a statement (a
// subquery under the measures of its values) answers what DuckDB answers
// for the statement itself, column types and names, values and order,
// for every kind of type, NULLs among them; and so does a statement run
// unguarded and measured by its pages.
func TestGuardedColumnsKeepTheResult(t *testing.T) {
	s := threeMonths(t)
	e, err := single(s.tab, s, Settings{Threads: 2, MemoryLimit: "512MB"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	plain, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	for _, q := range []string{
		typedStatement,
		`SELECT range AS i, range::VARCHAR AS s FROM range(300000) ORDER BY s DESC`,
		`SELECT 1 AS a, 'x' AS a, [1] AS a`,
		`SELECT j->'$.a' AS x, j FROM (SELECT '{"a": [1, 2, {"b": null}]}'::JSON AS j)`,
	} {
		for _, stmt := range []string{q, q + "; -- unguarded"} {
			want := collect(t, func(start func([]string, []string), row func([]any)) error {
				rows, err := plain.QueryContext(t.Context(), q)
				if err != nil {
					return err
				}
				defer rows.Close()
				names, _ := rows.Columns()
				cts, _ := rows.ColumnTypes()
				types := make([]string, len(cts))
				for i, ct := range cts {
					types[i] = ct.DatabaseTypeName()
				}
				start(names, types)
				vals := make([]any, len(names))
				dest := make([]any, len(vals))
				for i := range dest {
					dest[i] = &vals[i]
				}
				for rows.Next() {
					if err := rows.Scan(dest...); err != nil {
						return err
					}
					row(vals)
				}
				return rows.Err()
			})
			got := collect(t, func(start func([]string, []string), row func([]any)) error {
				return streamOf(t.Context(), e, stmt, func(h *Header) error { start(h.Columns, h.Types); return nil },
					func(v []any) error { row(v); return nil })

			})
			if got.head != want.head || len(got.rows) != len(want.rows) || !slices.Equal(got.rows, want.rows) {
				t.Errorf("%.80q:\n got %s, %d rows %.300v\nwant %s, %d rows %.300v", stmt, got.head, len(got.rows), got.rows, want.head, len(want.rows), want.rows)
			}
		}
	}
}

// typedStatement selects a column of every kind of DuckDB type a result
// may have, nested ones among them, each with a NULL.
const typedStatement = `SELECT * FROM (VALUES
	(true, 1::TINYINT, 2::SMALLINT, 3::INTEGER, 4::BIGINT, 5::UTINYINT, 6::USMALLINT, 7::UINTEGER, 8::UBIGINT,
	 170141183460469231731687303715884105727::HUGEINT, 9::UHUGEINT, 1.5::FLOAT, 2.25::DOUBLE, 123.456789::DECIMAL(18,6),
	 'grün'::VARCHAR, '\xAA\x00'::BLOB, '10110'::BIT, DATE '2026-03-29', TIME '01:02:03.456789', TIMETZ '01:02:03+01',
	 TIMESTAMP '2026-03-29 01:00:00.123456', TIMESTAMP_S '2026-03-29 01:00:00', TIMESTAMP_MS '2026-03-29 01:00:00.123',
	 TIMESTAMP_NS '2026-03-29 01:00:00.123456789', TIMESTAMPTZ '2026-03-29 01:00:00+00', INTERVAL '1 month 2 days 3 seconds',
	 '6d3a4b2e-7f0e-4a8b-9c1d-2e3f4a5b6c7d'::UUID, 'b'::ENUM('a', 'b'), '{"k": [1, "v"]}'::JSON,
	 [1, 2], ['x', NULL], [[1], NULL, []], [1, 2, 3]::INTEGER[3], ['a', 'bc']::VARCHAR[2],
	 {'a': 1, 'b': 'x'}, {'n': {'m': [1]}}, MAP {'k': 'v'}, MAP {1: [2.5]}, union_value(t := 'u'),
	 123456789012345678901234567890::BIGNUM, NULL),
	(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	 NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	 NULL, NULL, NULL),
	(false, -1::TINYINT, -2::SMALLINT, -3::INTEGER, -4::BIGINT, 255::UTINYINT, 65535::USMALLINT, 4294967295::UINTEGER, 18446744073709551615::UBIGINT,
	 -1::HUGEINT, 0::UHUGEINT, -0.5::FLOAT, -1e300::DOUBLE, -0.000001::DECIMAL(18,6),
	 '', ''::BLOB, '0'::BIT, DATE 'infinity', TIME '23:59:59', TIMETZ '23:59:59-05',
	 TIMESTAMP '-infinity', TIMESTAMP_S '1970-01-01', TIMESTAMP_MS '1970-01-01', TIMESTAMP_NS '1970-01-01',
	 TIMESTAMPTZ 'infinity', INTERVAL '-1 day', '00000000-0000-0000-0000-000000000000'::UUID, 'a'::ENUM('a', 'b'), 'null'::JSON,
	 [], [NULL], [NULL], [NULL, NULL, NULL]::INTEGER[3], [NULL, '']::VARCHAR[2],
	 {'a': NULL, 'b': NULL}, {'n': NULL}, MAP {}, MAP {2: NULL}, union_value(t := NULL),
	 -1::BIGNUM, 'x')
) AS t(b, i8, i16, i32, i64, u8, u16, u32, u64, huge, uhuge, f32, f64, dec, s, blob, bit, d, tm, tmtz, ts, ts_s, ts_ms, ts_ns,
       tstz, iv, uuid, enum, json, list, slist, nested, arr, sarr, struct, nstruct, map, lmap, uni, big, last)`

// collected is a result as text: its header and its rows.
type collected struct {
	head string
	rows []string
}

// collect runs query, which hands its columns and types to start and its
// rows to row, and returns them as text.
func collect(t *testing.T, query func(start func(names, types []string), row func([]any)) error) collected {
	t.Helper()
	var c collected
	err := query(func(names, types []string) { c.head = fmt.Sprint(names, types) }, func(v []any) { c.rows = append(c.rows, fmt.Sprint(v)) })
	if err != nil {
		t.Fatal(err)
	}
	return c
}

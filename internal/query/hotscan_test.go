package query

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/meterstore/meterstore/series"
)

// TestColumnNames lists the names a statement may read columns by, or
// every column where it reads some it does not name.
func TestColumnNames(t *testing.T) {
	for _, c := range []struct {
		sql  string
		want []string // nil: every column
	}{
		{`SELECT malo_id, sum(value) AS kwh FROM readings WHERE "from" >= '2026-03-01' GROUP BY 1 ORDER BY kwh`, []string{"malo_id", "value", "from", "kwh"}},
		{`SELECT count(*) FROM readings`, []string{}},
		{`SELECT r.Unit FROM readings r JOIN readings_versions v USING (malo_id)`, []string{"r", "unit", "malo_id"}},
		{`WITH x AS (SELECT quality FROM readings) SELECT count(*) FROM x`, []string{"quality"}},
		{`SELECT * FROM readings`, nil},
		{`SELECT readings.* FROM readings`, nil},
		{`SELECT COLUMNS('m.*') FROM readings`, nil},
		{`SELECT * EXCLUDE (unit) FROM readings`, nil},
		{`SELECT #1 FROM readings`, nil},
		{`SELECT count(*) FROM readings NATURAL JOIN readings_versions`, nil},
		{`SELECT malo_id FROM readings GROUP BY ALL ORDER BY ALL`, []string{"malo_id"}},
		{`SELECT malo_id FROM readings ORDER BY (SELECT count(*) FROM (SELECT * FROM readings_versions))`, nil},
		{`SELECT malo_id FROM readings ORDER BY #1`, []string{"malo_id"}},
		{`SELECT r FROM readings r`, nil},
		{`SELECT readings FROM readings`, nil},
		{`WITH x AS (SELECT value FROM readings) SELECT x FROM x`, nil},
		{`SELECT (SELECT max(sparte) FROM readings_versions), sum(value) FROM readings`, []string{"sparte", "value"}},
	} {
		db, err := parser()
		if err != nil {
			t.Fatal(err)
		}
		an, err := analyze(t.Context(), db, c.sql, "power", nil)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case c.want == nil && an.columns != nil:
			t.Errorf("%s: %v, want every column", c.sql, slices.Sorted(maps.Keys(an.columns)))
		case c.want != nil && (an.columns == nil || !slices.Equal(slices.Sorted(maps.Keys(an.columns)), slices.Sorted(slices.Values(c.want)))):
			t.Errorf("%s: %v, want %v", c.sql, an.columns, c.want)
		}
	}
	// A statement that reads completeness reads every column of readings.
	db, _ := parser()
	if an, err := analyze(t.Context(), db, `SELECT malo_id FROM completeness`, "power", nil); err != nil || an.columns != nil {
		t.Errorf("completeness: %v, %v", an.columns, err)
	}
}

// TestHotDictionaries answers from a hot read that keeps columns in a
// dictionary as from one that does not, and scans the dictionary only for
// a statement that may read one of its columns.
func TestHotDictionaries(t *testing.T) {
	plain, dict := threeMonths(t), threeMonths(t)
	dict.dict = []string{"unit", "quality", "melo_id"}
	e1, e2 := newEngine(t, plain), newEngine(t, dict)
	for _, c := range []struct {
		sql  string
		dict bool // the dictionary is read
	}{
		{`SELECT malo_id, sum(value), count(*) FROM readings WHERE "from" >= '2026-03-01' GROUP BY ALL ORDER BY ALL`, false},
		{`SELECT count(*) FROM readings_versions WHERE "from" >= '2026-03-01'`, false},
		{`SELECT unit, quality, count(*) FROM readings WHERE "from" >= '2026-03-01' GROUP BY ALL ORDER BY ALL`, true},
		{`SELECT * FROM readings WHERE "from" >= '2026-03-01' ORDER BY ALL`, true},
		{`SELECT r FROM readings r WHERE "from" >= '2026-03-01' ORDER BY ALL`, true},
		{`SELECT count(*) FROM readings WHERE "from" >= '2026-03-01' AND melo_id IS NULL`, true},
		{`SELECT malo_id, "from" FROM readings WHERE "from" >= '2026-02-28 23:00:00Z' ORDER BY ALL LIMIT 5`, false},
	} {
		want := values(t, e1, c.sql)
		if got := values(t, e2, c.sql); !slices.Equal(got, want) {
			t.Errorf("%s:\n got %.200v\nwant %.200v", c.sql, got, want)
		}
		if dict.read == nil {
			t.Fatalf("%s: no hot read", c.sql)
		}
		if read := dict.read.Scans()[1] > 0; read != c.dict {
			t.Errorf("%s: dictionary read %v, want %v", c.sql, read, c.dict)
		}
		dict.read = nil
	}
	// A dictionary with the first column is read for every statement:
	// where a statement needs no column of a union, DuckDB reads the
	// first one.
	first := threeMonths(t)
	first.dict = []string{"malo_id", "obis_code", "channel"}
	e3 := newEngine(t, first)
	for _, sql := range []string{`SELECT count(*) FROM readings_versions`, `SELECT count(*) FROM readings`, `SELECT sum(value) FROM readings`,
		`SELECT malo_id, channel, "from", version FROM readings ORDER BY ALL`} {
		if got, want := values(t, e3, sql), values(t, e1, sql); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", sql, got, want)
		}
		if first.read.Scans()[1] == 0 {
			t.Errorf("%s: the dictionary of the first column was not read", sql)
		}
	}
}

// TestHotColumnNotRead makes sure that a dictionary column left out for a
// statement fails the statement if it reads it after all, never reads as
// NULL.
func TestHotColumnNotRead(t *testing.T) {
	s := threeMonths(t)
	s.dict = []string{"unit"}
	inst, err := start(t.Context(), Settings{Threads: 1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer inst.close()
	hr, err := s.HotRead(t.Context(), memSnapshot{}, series.Range{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := layoutOf(s.tab)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		columns map[string]bool
		err     bool
	}{{nil, false}, {map[string]bool{"value": true, "unit": true}, false}, {map[string]bool{"value": true}, true}} {
		hot, err := newHotScan(hr, "power", inst.nextFunc(), 1, c.columns)
		if err != nil {
			t.Fatal(err)
		}
		rel, err := hot.relation(l, nil, false, false)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := hot.register(inst.conn, rel); err != nil || n == 0 {
			t.Fatalf("registered %d functions: %v", n, err)
		}
		var n int64
		if err := inst.conn.QueryRowContext(t.Context(), `SELECT count(*) FROM (`+rel+`)`).Scan(&n); err != nil || n == 0 {
			t.Fatalf("%v: count: %d, %v", c.columns, n, err)
		}
		var units int64
		err = inst.conn.QueryRowContext(t.Context(), `SELECT count(unit) FROM (`+rel+`)`).Scan(&units)
		switch {
		case c.err && (err == nil || !strings.Contains(err.Error(), "column unit of the hot tier was not read")):
			t.Errorf("%v: unit read: %d, %v", c.columns, units, err)
		case !c.err && (err != nil || units != n):
			t.Errorf("%v: %d units of %d rows, %v", c.columns, units, n, err)
		}
	}
}

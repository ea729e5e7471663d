package query

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/meterstore/meterstore/series"
)

// TestExtractTables: each table a statement names is bounded by the
// conjuncts on its own columns, only where its one reference is a leaf of
// a plain join; anything else leaves it open.
func TestExtractTables(t *testing.T) {
	db, err := parser()
	if err != nil {
		t.Fatal(err)
	}
	var (
		a    = ts("2026-01-01T00:00:00Z")
		b    = ts("2026-02-01T00:00:00Z")
		open series.Range
	)
	ab := series.Range{From: a, To: b}
	from := func(t time.Time) series.Range { return series.Range{From: t} }
	for _, c := range []struct {
		sql    string
		own    series.Range
		noOwn  bool
		unqual bool
		tables map[string]series.Range
	}{
		{sql: `SELECT * FROM gas.readings WHERE "from" >= '2026-01-01 00:00:00Z' AND "from" < '2026-02-01 00:00:00Z'`,
			noOwn: true, tables: map[string]series.Range{"gas": ab}},
		{sql: `SELECT * FROM readings p JOIN gas.readings g USING (malo_id) WHERE p."from" >= '2026-01-01 00:00:00Z' AND g."from" < '2026-02-01 00:00:00Z'`,
			unqual: true, own: from(a), tables: map[string]series.Range{"gas": {To: b}}},
		{sql: `SELECT * FROM readings p LEFT JOIN gas.readings_versions g ON p.malo_id = g.malo_id, system.tables s WHERE g."from" BETWEEN '2026-01-01 00:00:00Z' AND '2026-01-31 23:59:59.999999Z' AND g.malo_id = 'x'`,
			unqual: true, own: open, tables: map[string]series.Range{"gas": {From: a, To: b, MaLo: []string{"x"}}}},
		// Unqualified columns are ambiguous in a join: they bound nothing.
		{sql: `SELECT * FROM readings p, gas.readings g WHERE "from" >= '2026-01-01 00:00:00Z'`,
			unqual: true, own: open, tables: map[string]series.Range{"gas": open}},
		// The default table by its name, and unqualified.
		{sql: `SELECT * FROM power.readings WHERE "from" >= '2026-01-01 00:00:00Z'`, own: from(a)},
		{sql: `SELECT * FROM power.readings x JOIN readings y USING (malo_id) WHERE x."from" >= '2026-01-01 00:00:00Z'`, own: open, unqual: true},
		// Twice the same table, a subquery, a CTE, a positional or as-of
		// join, query_table: open.
		{sql: `SELECT * FROM gas.readings g JOIN gas.readings_versions v USING (malo_id) WHERE g."from" >= '2026-01-01 00:00:00Z'`,
			noOwn: true, tables: map[string]series.Range{"gas": open}},
		{sql: `SELECT * FROM readings p WHERE p."from" >= '2026-01-01 00:00:00Z' AND p.malo_id IN (SELECT malo_id FROM gas.readings WHERE "from" >= '2026-01-01 00:00:00Z')`,
			unqual: true, own: from(a), tables: map[string]series.Range{"gas": open}},
		{sql: `WITH g AS (SELECT * FROM gas.readings) SELECT * FROM g WHERE "from" >= '2026-01-01 00:00:00Z'`,
			noOwn: true, tables: map[string]series.Range{"gas": open}},
		{sql: `SELECT * FROM readings p POSITIONAL JOIN gas.readings g WHERE g."from" >= '2026-01-01 00:00:00Z' AND p."from" >= '2026-01-01 00:00:00Z'`,
			unqual: true, own: open, tables: map[string]series.Range{"gas": open}},
		{sql: `SELECT * FROM readings p ASOF JOIN gas.readings g ON p.malo_id = g.malo_id AND p."from" >= g."from" WHERE g."from" >= '2026-01-01 00:00:00Z'`,
			unqual: true, own: open, tables: map[string]series.Range{"gas": open}},
		{sql: `SELECT * FROM gas.readings g, query_table('readings') WHERE g."from" >= '2026-01-01 00:00:00Z'`,
			tables: map[string]series.Range{"gas": open}},
		{sql: `SELECT * FROM gas.readings AS g(a, b, c) WHERE g."from" >= '2026-01-01 00:00:00Z'`,
			noOwn: true, tables: map[string]series.Range{"gas": open}},
		// DESCRIBE needs the relations, not their rows.
		{sql: `DESCRIBE SELECT * FROM gas.readings`,
			own: series.Range{From: epoch, To: epoch}, tables: map[string]series.Range{"gas": {From: epoch, To: epoch}}},
	} {
		got, err := analyze(t.Context(), db, c.sql, "power", nil)
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		if !sameRange(got.Range, c.own) || got.NoReadings != c.noOwn || got.unqualified != c.unqual {
			t.Errorf("%s:\n own %+v no readings %v unqualified %v\nwant %+v %v %v", c.sql, got.Range, got.NoReadings, got.unqualified, c.own, c.noOwn, c.unqual)
		}
		if !maps.EqualFunc(got.Tables, c.tables, sameRange) || (got.Tables == nil) != (c.tables == nil) {
			t.Errorf("%s:\n tables %+v\n  want %+v", c.sql, got.Tables, c.tables)
		}
	}
}

func sameRange(a, b series.Range) bool {
	return a.From.Equal(b.From) && a.To.Equal(b.To) && slices.Equal(a.MaLo, b.MaLo)
}

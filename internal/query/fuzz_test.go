package query

import (
	"reflect"
	"testing"
)

// FuzzExtract feeds the SQL safety gate arbitrary text, seeded with the
// statements it must refuse and the bounded SELECTs it must read: no input
// may panic it, and it gives the same answer twice.
func FuzzExtract(f *testing.F) {
	for _, s := range []string{
		`CREATE TABLE x (i INTEGER)`,
		`INSERT INTO tiers.hot SELECT * FROM tiers.hot`,
		`COPY (SELECT 1) TO '/tmp/x'`,
		`ATTACH '/tmp/x.db' AS other`,
		`INSTALL httpfs`,
		`PRAGMA version`,
		`SET enable_external_access = true`,
		`CALL pragma_version()`,
		`SELECT 1; DROP VIEW readings`,
		`EXPLAIN SELECT 1`,
		`SELECT * FROM readings WHERE "from" >= '2026-03-01' AND "from" < '2026-04-01'`,
		`SELECT count(*) FROM readings_versions WHERE malo_id IN ('50000000005', '50000000013')`,
		`SELECT * FROM readings WHERE "from" BETWEEN TIMESTAMPTZ '2026-03-01 00:00:00+01' AND DATE '2026-03-02'`,
		`SELECT * FROM readings WHERE "from" > 'infinity'`,
		`SELECT * FROM readings WHERE NOT ("from" < '2026-03-01') OR malo_id = 'x'`,
		`WITH r AS (SELECT * FROM readings) SELECT * FROM r`,
		`SELECT * FROM system.tables`,
		`DESCRIBE readings`,
		`SELECT '` + "\x00" + `'`,
		`SELECT 1 -- ; DROP VIEW readings`,
		`/* */ SELECT /* ; */ 1`,
		``,
		`;`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		r1, err1 := Extract(sql)
		r2, err2 := Extract(sql)
		if (err1 == nil) != (err2 == nil) || (err1 == nil && !reflect.DeepEqual(r1, r2)) {
			t.Fatalf("%q: two answers: %v %v / %v %v", sql, r1, err1, r2, err2)
		}
	})
}

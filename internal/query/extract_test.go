package query

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestExtractForms(t *testing.T) {
	const (
		a = "2026-01-01T00:00:00Z"
		b = "2026-02-01T00:00:00Z"
	)
	us := time.Microsecond
	var zero time.Time
	for _, c := range []struct {
		sql      string
		from, to time.Time
	}{
		{`SELECT * FROM readings WHERE "from" >= '2026-01-01 00:00:00Z' AND "from" < '2026-02-01 00:00:00Z'`, ts(a), ts(b)},
		{`SELECT * FROM readings WHERE "from" > TIMESTAMPTZ '2026-01-01 00:00:00+00'`, ts(a).Add(us), zero},
		{`SELECT * FROM readings WHERE "from" <= '2026-02-01 01:00:00+01'::TIMESTAMPTZ`, zero, ts(b).Add(us)},
		{`SELECT * FROM readings WHERE "from" = '2026-01-01T00:00:00Z'`, ts(a), ts(a).Add(us)},
		{`SELECT * FROM readings WHERE '2026-01-01 00:00:00Z' <= "from" AND '2026-02-01 00:00:00Z' > "from"`, ts(a), ts(b)},
		{`SELECT * FROM readings WHERE '2026-01-01 00:00:00Z' < "from"`, ts(a).Add(us), zero},
		{`SELECT * FROM readings WHERE "from" BETWEEN '2026-01-01 00:00:00Z' AND '2026-02-01 00:00:00Z'`, ts(a), ts(b).Add(us)},
		{`SELECT * FROM readings WHERE "from" BETWEEN DATE '2026-01-01' AND malo_id`, ts(a), zero},
		{`SELECT * FROM readings WHERE "from" >= DATE '2026-01-01' AND "from" < '2026-02-01'::DATE`, ts(a), ts(b)},
		{`SELECT * FROM readings WHERE "from" >= TIMESTAMP '2026-01-01 00:00:00' AND "from" < '2026-02-01'`, ts(a), ts(b)},
		{`SELECT * FROM readings WHERE "from" >= '2026-01-01 01:00:00 Europe/Berlin'`, ts(a), zero},
		{`SELECT * FROM readings WHERE "from" < '2026-01-31 23:30:00Z'::TIMESTAMPTZ::DATE`, zero, ts("2026-01-31T00:00:00Z")},
		// DuckDB's parser turns the negation of a comparison around.
		{`SELECT * FROM readings WHERE NOT ("from" >= '2026-01-01 00:00:00Z')`, zero, ts(a)},
		// Several bounds: the tightest.
		{`SELECT * FROM readings WHERE "from" >= '2025-01-01 00:00:00Z' AND "from" >= '2026-01-01 00:00:00Z' AND "from" < '2027-01-01 00:00:00Z' AND "from" < '2026-02-01 00:00:00Z'`, ts(a), ts(b)},
		// Nested ANDs, other conjuncts, qualifiers, aliases, case.
		{`SELECT * FROM readings r WHERE (r."from" >= '2026-01-01 00:00:00Z' AND malo_id = 'x') AND ("FROM" < '2026-02-01 00:00:00Z' AND value > 0)`, ts(a), ts(b)},
		{`SELECT * FROM readings_versions WHERE readings_versions."from" >= '2026-01-01 00:00:00Z'`, ts(a), zero},
		{`SELECT * FROM READINGS WHERE "from" >= '2026-01-01 00:00:00Z' AND "from" < b."from"`, ts(a), zero},
		{`FROM readings WHERE "from" >= '2026-01-01 00:00:00Z' ORDER BY 1 LIMIT 3`, ts(a), zero},
		{`SELECT malo_id, count(*) FROM readings WHERE "from" >= '2026-01-01 00:00:00Z' GROUP BY ALL HAVING count(*) > 1 QUALIFY row_number() OVER () = 1`, ts(a), zero},
		{`SELECT * FROM readings WHERE "from" >= '2026-01-01 00:00:00Z' AND malo_id IN (SELECT "table" FROM system.tables)`, ts(a), zero},
		// An empty range.
		{`SELECT * FROM readings WHERE "from" > '2026-02-01 00:00:00Z' AND "from" < '2026-01-01 00:00:00Z'`, ts(b).Add(us), ts(a)},
		// Unbounded: not a conjunct of constant comparisons.
		{`SELECT * FROM readings WHERE "from" >= '2026-01-01 00:00:00Z' OR "from" < '2026-02-01 00:00:00Z'`, zero, zero},
		{`SELECT * FROM readings WHERE NOT ("from" >= '2026-01-01 00:00:00Z' AND value > 0)`, zero, zero},
		{`SELECT * FROM readings WHERE "from" NOT BETWEEN '2026-01-01 00:00:00Z' AND '2026-02-01 00:00:00Z'`, zero, zero},
		{`SELECT * FROM readings WHERE "from" + INTERVAL 1 DAY >= '2026-01-01 00:00:00Z'`, zero, zero},
		{`SELECT * FROM readings WHERE date_trunc('day', "from") >= '2026-01-01 00:00:00Z'`, zero, zero},
		{`SELECT * FROM readings WHERE "from" >= now() - INTERVAL 1 DAY`, zero, zero},
		{`SELECT * FROM readings WHERE "from" >= TRY_CAST('2026-01-01' AS DATE)`, zero, zero},
		{`SELECT * FROM readings WHERE "from" >= TIMESTAMP_NS '2026-01-01 00:00:00'`, zero, zero},
		{`SELECT * FROM readings WHERE "from" >= ?`, zero, zero},
		{`SELECT * FROM readings WHERE "from" >= (SELECT max("from") FROM readings)`, zero, zero},
		{`SELECT * FROM readings WHERE "from" IN ('2026-01-01 00:00:00Z')`, zero, zero},
		{`SELECT * FROM readings WHERE "from" > 'infinity'`, zero, zero},
		{`SELECT * FROM readings WHERE "from" >= 'not a time'`, zero, zero},
		{`SELECT * FROM readings WHERE "to" >= '2026-01-01 00:00:00Z'`, zero, zero},
		{`SELECT * FROM readings x WHERE readings."from" >= '2026-01-01 00:00:00Z'`, zero, zero},
		{`SELECT * FROM readings AS r(a, b, c, d, "from") WHERE "from" >= '2026-01-01 00:00:00Z'`, zero, zero},
		{`SELECT * FROM readings WHERE "from" >= '2026-01-01 00:00:00Z' USING SAMPLE 10%`, zero, zero},
		{`SELECT * FROM readings TABLESAMPLE 10% WHERE "from" >= '2026-01-01 00:00:00Z'`, zero, zero},
		{`WITH x AS (SELECT 1) SELECT * FROM readings WHERE "from" >= '2026-01-01 00:00:00Z'`, zero, zero},
		{`WITH readings AS (SELECT * FROM readings_versions) SELECT * FROM readings WHERE "from" >= '2026-01-01 00:00:00Z'`, zero, zero},
		{`SELECT * FROM readings JOIN readings_versions USING (malo_id) WHERE "from" >= '2026-01-01 00:00:00Z'`, zero, zero},
		{`SELECT * FROM readings, system.tables WHERE "from" >= '2026-01-01 00:00:00Z'`, zero, zero},
		{`SELECT * FROM (SELECT * FROM readings) WHERE "from" >= '2026-01-01 00:00:00Z'`, zero, zero},
		{`SELECT *, (SELECT count(*) FROM readings) FROM readings WHERE "from" >= '2026-01-01 00:00:00Z'`, zero, zero},
		{`SELECT * FROM readings WHERE "from" >= '2026-01-01 00:00:00Z' UNION ALL SELECT * FROM readings WHERE "from" >= '2026-01-01 00:00:00Z'`, zero, zero},
		{`SELECT * FROM readings r JOIN other.readings o USING (malo_id) WHERE o."from" >= '2026-01-01 00:00:00Z'`, zero, zero},
		{`SELECT * FROM query_table('readings') WHERE "from" >= '2026-01-01 00:00:00Z'`, zero, zero},
		{`SUMMARIZE SELECT * FROM readings WHERE "from" >= '2026-01-01 00:00:00Z'`, zero, zero},
	} {
		r, err := Extract(c.sql)
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		if !r.From.Equal(c.from) || !r.To.Equal(c.to) || r.NoReadings {
			t.Errorf("%s:\n got [%v, %v) %v\nwant [%v, %v)", c.sql, r.From, r.To, r.NoReadings, c.from, c.to)
		}
	}
}

func TestExtractNoReadings(t *testing.T) {
	for _, sql := range []string{
		`SELECT 1`,
		`SELECT * FROM system.tables`,
		`SELECT * FROM range(10)`,
		`SELECT meter_local_day(now())`,
	} {
		if r, err := Extract(sql); err != nil || !r.NoReadings {
			t.Errorf("%s: %+v %v", sql, r, err)
		}
	}
}

func TestExtractDescribe(t *testing.T) {
	for sql, reads := range map[string]bool{
		`DESCRIBE readings`:                    false,
		`DESCRIBE SELECT * FROM readings`:      false,
		`SHOW TABLES`:                          false,
		`SHOW ALL TABLES`:                      false,
		`SUMMARIZE readings`:                   true,
		`SELECT * FROM (DESCRIBE readings)`:    true,
		`SUMMARIZE SELECT value FROM readings`: true,
	} {
		r, err := Extract(sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if r.NoReadings || r.Empty() == reads {
			t.Errorf("%s: %+v, reads rows: %v", sql, r, reads)
		}
	}
}

func TestExtractRefuses(t *testing.T) {
	for _, sql := range []string{
		`DELETE FROM readings`,
		`SELECT 1; SELECT 2`,
		`COPY readings TO '/tmp/x'`,
	} {
		if _, err := Extract(sql); !errors.Is(err, ErrNotReadOnly) {
			t.Errorf("%s: %v", sql, err)
		}
	}
	if _, err := Extract(`SELEC 1`); err == nil || errors.Is(err, ErrNotReadOnly) {
		t.Errorf("syntax error: %v", err)
	}
	// A SELECT DuckDB cannot take is an invalid statement that says why,
	// not a statement that is no SELECT.
	for _, sql := range []string{
		`SELECT 'a%' SIMILAR TO 'a!%' ESCAPE '!'`,
		`SELECT malo_id FROM readings WHERE malo_id NOT SIMILAR TO '1#_%' ESCAPE '#'`,
	} {
		if _, err := Extract(sql); !errors.Is(err, ErrInvalidQuery) || errors.Is(err, ErrNotReadOnly) ||
			!strings.Contains(err.Error(), "Custom escape in SIMILAR TO") || strings.Contains(err.Error(), "not a SELECT") {
			t.Errorf("%s: %v; want an invalid statement saying why", sql, err)
		}
	}
	// A number beyond DOUBLE beside a system relation, which runs as
	// DuckDB's rendering of the statement, where the number would be
	// NULL: the caller's mistake, not the engine's.
	if _, err := Extract(`SELECT * FROM system.tables WHERE 1e309 > 0`); !errors.Is(err, ErrInvalidQuery) || !strings.Contains(err.Error(), "1e309") {
		t.Errorf("a non-finite literal beside a system relation: %v", err)
	}
}

// TestExtractMaLo: a conjunct naming market locations by literal narrows
// the rows read to them; anything else leaves them open.
func TestExtractMaLo(t *testing.T) {
	for _, c := range []struct {
		sql  string
		want []string
	}{
		{`SELECT * FROM readings WHERE malo_id = '50000000005'`, []string{"50000000005"}},
		{`SELECT * FROM readings WHERE '50000000005' = malo_id AND "from" >= '2026-01-01 00:00:00Z'`, []string{"50000000005"}},
		{`SELECT * FROM readings r WHERE r.malo_id IN ('a', 'b') AND value > 0`, []string{"a", "b"}},
		{`SELECT * FROM readings WHERE value > 0 AND (malo_id = 'a' AND obis_code = 'x')`, []string{"a"}},
		{`SELECT * FROM readings WHERE malo_id = 'a' OR malo_id = 'b'`, nil},
		{`SELECT * FROM readings WHERE malo_id <> 'a'`, nil},
		{`SELECT * FROM readings WHERE NOT (malo_id = 'a')`, nil},
		{`SELECT * FROM readings WHERE malo_id NOT IN ('a')`, nil},
		{`SELECT * FROM readings WHERE lower(malo_id) = 'a'`, nil},
		{`SELECT * FROM readings WHERE malo_id = 5`, nil},
		{`SELECT * FROM readings WHERE malo_id IN ('a', melo_id)`, nil},
		{`SELECT * FROM readings WHERE malo_id IN (SELECT 'a')`, nil},
		{`SELECT * FROM readings WHERE melo_id = 'a'`, nil},
		{`SELECT * FROM readings a JOIN readings b USING (malo_id) WHERE a.malo_id = 'x'`, nil},
		{`WITH x AS (SELECT * FROM readings) SELECT * FROM x WHERE malo_id = 'a'`, nil},
	} {
		r, err := Extract(c.sql)
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		if !slices.Equal(r.MaLo, c.want) || (r.MaLo == nil) != (c.want == nil) {
			t.Errorf("%s: MaLo %q, want %q", c.sql, r.MaLo, c.want)
		}
	}
}

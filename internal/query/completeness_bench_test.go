package query

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
)

// The cost of completeness on a month of a fleet in the cold tier, beside
// the resolved count per series and day that it cannot be cheaper than.
// The fixture: completenessMeters quarter-hourly meters, a Parquet file a
// day, for the month and the 31 days of lookback before it, 3% of the
// keys corrected by a second version.

const completenessMeters = 1000

// coldFleet writes the fixture's files into s, from 2026-01-01 (local) for
// days days, and archives them: W is the end of the last day.
func coldFleet(b *testing.B, s *memSource, days int) {
	l, err := layoutOf(s.tab)
	if err != nil {
		b.Fatal(err)
	}
	exprs := map[string]string{
		"malo_id":       `'M' || lpad(CAST(m AS VARCHAR), 10, '0')`,
		"obis_code":     `'1-1:1.29.0'`,
		"sparte":        `'STROM'`,
		"from":          `f`,
		"to":            `f + INTERVAL 15 MINUTE`,
		"value":         `(m % 97) / 10`,
		"unit":          `'kWh'`,
		"quality":       `'220'`,
		"resolution":    `'PT15M'`,
		"version":       `v`,
		"version_scope": `'9900000000003:2026-01'`,
		"recorded_at":   `TIMESTAMPTZ '2026-04-01 00:00:00+00'`,
		"balancing_day": `CAST(timezone('Europe/Berlin', f) AS DATE)`,
		"channel":       `'A'`,
	}
	sel := make([]string, len(l.cols))
	for i, c := range l.cols {
		e, ok := exprs[c.name]
		if !ok {
			e = "NULL"
		}
		sel[i] = `CAST(` + e + ` AS ` + c.typ + `) AS ` + ident(c.name)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for d := range days {
		lo, hi := cal.DayStart(date2(2026, 1, 1+d)), cal.DayStart(date2(2026, 1, 2+d))
		path := filepath.Join(s.dir, fmt.Sprintf("fleet-%03d.parquet", d))
		q := `COPY (SELECT ` + strings.Join(sel, ", ") + ` FROM (
			SELECT m, f, 1 AS v FROM range(` + fmt.Sprint(completenessMeters) + `) AS t(m),
				unnest(generate_series(` + timestamptz(lo) + `, ` + timestamptz(hi) + ` - INTERVAL 15 MINUTE, INTERVAL 15 MINUTE)) AS u(f)
			UNION ALL
			SELECT m, f, 2 FROM range(` + fmt.Sprint(completenessMeters) + `) AS t(m),
				unnest(generate_series(` + timestamptz(lo) + `, ` + timestamptz(hi) + ` - INTERVAL 15 MINUTE, INTERVAL 15 MINUTE)) AS u(f)
			WHERE hash(m, f) % 100 < 3) ORDER BY 1, 5) TO ` + quote(path) + ` (FORMAT parquet)`
		if _, err := db.Exec(`SET TimeZone = 'UTC'`); err != nil {
			b.Fatal(err)
		}
		if _, err := db.Exec(q); err != nil {
			b.Fatal(err)
		}
		s.files = append(s.files, coldFile{path: path, lo: lo, hi: hi})
	}
	s.w, s.hasW, s.floor = cal.DayStart(date2(2026, 1, 1+days)), true, cal.DayStart(date2(2026, 1, 1+days))
}

func benchmarkFleet(b *testing.B, sql string) {
	s := newSource(b, loadProfile())
	coldFleet(b, s, 31+28)
	e, err := single(s.tab, s, Settings{Threads: 2, MemoryLimit: "2GB"})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var rows int
	for b.Loop() {
		res, err := queryOf(context.Background(), e, sql)
		if err != nil {
			b.Fatal(err)
		}
		rows = len(res.Rows)
	}
	b.ReportMetric(float64(rows), "rows")
}

// BenchmarkCompletenessMonth: February 2026 of the fleet, with January as
// lookback.
func BenchmarkCompletenessMonth(b *testing.B) {
	benchmarkFleet(b, `SELECT * FROM completeness WHERE balancing_day BETWEEN '2026-02-01' AND '2026-02-28'`)
}

// BenchmarkCompletenessDay: one day, with the 31 days before it.
func BenchmarkCompletenessDay(b *testing.B) {
	benchmarkFleet(b, `SELECT * FROM completeness WHERE balancing_day = '2026-02-28'`)
}

// BenchmarkResolvedCountsMonth: the resolved readings of February counted
// per series and day, what completeness needs at least.
func BenchmarkResolvedCountsMonth(b *testing.B) {
	benchmarkFleet(b, `SELECT malo_id, obis_code, channel, balancing_day, count(*) FROM readings
		WHERE "from" >= '2026-01-31 23:00:00Z' AND "from" < '2026-02-28 23:00:00Z' GROUP BY ALL`)
}

// date2 returns the date y-m-d, normalized as by time.Date: 2026-01-32 is
// 2026-02-01.
func date2(y int, m time.Month, d int) metering.Date {
	return metering.Date{Year: y, Month: m, Day: d}.AddDays(0)
}

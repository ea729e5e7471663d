package query

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// BenchmarkCompletenessDashboard times the dashboard's statement (the
// completeness of 90 days, summed per day) on MS_BENCH_DAILY_METERS
// meters (default 50) with two archived days, through daily computed from
// readings and through daily from the stored rollup, in the same run;
// the two must agree. It then times daily alone over those days.
func BenchmarkCompletenessDashboard(b *testing.B) {
	meters := 50
	if n, err := strconv.Atoi(os.Getenv("MS_BENCH_DAILY_METERS")); err == nil && n > 0 {
		meters = n
	}
	tab := loadProfile()
	s := newIcebergSource(b, tab)
	d0 := metering.Date{Year: 2026, Month: time.January, Day: 11}
	var rows []series.Reading
	for i := range meters {
		for d := range 2 {
			rows = append(rows, quarterHours(i, cal.DayStart(d0.AddDays(d)), 96)...)
		}
	}
	w := cal.DayStart(d0.AddDays(2))
	if _, err := s.tier.Archive(b.Context(), s.h, w, cal.DayStart(d0), w, cold.Readings(inKeyOrder(rows))); err != nil {
		b.Fatal(err)
	}
	if _, err := s.tier.CatchUpRollup(b.Context(), s.h); err != nil {
		b.Fatal(err)
	}
	computed, err := single(tab, s, Settings{Threads: 2})
	if err != nil {
		b.Fatal(err)
	}
	rs := &rollupSource{icebergSource: s}
	stored, err := single(tab, rs, Settings{Threads: 2})
	if err != nil {
		b.Fatal(err)
	}
	const sql = `SELECT balancing_day, sum(expected), sum(present), sum(missing), sum(surplus), count(*) FILTER (WHERE NOT due)
		FROM completeness WHERE balancing_day BETWEEN DATE '2025-12-01' AND DATE '2026-02-28' GROUP BY 1 ORDER BY 1`
	want, err := queryOf(b.Context(), computed, sql)
	if err != nil {
		b.Fatal(err)
	}
	got, err := queryOf(b.Context(), stored, sql)
	if err != nil {
		b.Fatal(err)
	}
	if fmt.Sprint(got.Rows) != fmt.Sprint(want.Rows) || len(want.Rows) == 0 || rs.used.Load() == 0 {
		b.Fatalf("the rollup answers %v, readings %v", got.Rows, want.Rows)
	}
	// daily alone, over the same days and the lookback, shows what of
	// completeness's time is reading daily.
	const dailySQL = `SELECT balancing_day, sum(present), sum(on_grid) FROM daily
		WHERE balancing_day BETWEEN DATE '2025-10-31' AND DATE '2026-02-28' GROUP BY 1 ORDER BY 1`
	for _, e := range []struct {
		name, sql string
		e         *Engine
	}{{"readings", sql, computed}, {"rollup", sql, stored}, {"daily-alone/rollup", dailySQL, stored}} {
		b.Run(e.name, func(b *testing.B) {
			for b.Loop() {
				begin := time.Now()
				res, err := queryOf(b.Context(), e.e, e.sql)
				if err != nil {
					b.Fatal(err)
				}
				b.Logf("%s: %v; steps %v", e.name, time.Since(begin).Round(time.Millisecond), res.Timing)
			}
		})
	}
}

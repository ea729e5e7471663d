package query

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/series"
)

// BenchmarkDaily reads per-meter totals of two archived months, and the
// days with intervals missing, through daily computed from readings and
// through daily from the stored rollup, in the same run; the two must
// agree. The ratio of the two is the rollup's speedup.
// MS_BENCH_DAILY_METERS sets the meters (default 50).
func BenchmarkDaily(b *testing.B) {
	meters := 50
	if n, err := strconv.Atoi(os.Getenv("MS_BENCH_DAILY_METERS")); err == nil && n > 0 {
		meters = n
	}
	tab := loadProfile()
	s := newIcebergSource(b, tab)
	for _, w := range [][2]time.Time{{jan2026, feb2026}, {feb2026, mar2026}} {
		var rows []series.Reading
		for i := range meters {
			for from := w[0]; from.Before(w[1]); from = from.Add(24 * time.Hour) {
				rows = append(rows, quarterHours(i, from, 96)...)
			}
		}
		if _, err := s.tier.Archive(b.Context(), s.h, w[1], w[0], w[1], cold.Readings(inKeyOrder(rows))); err != nil {
			b.Fatal(err)
		}
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
	for _, q := range []struct{ name, sql string }{
		{"totals", `SELECT malo_id, sum(value_sum), sum(present) FROM daily WHERE balancing_day BETWEEN '2026-01-02' AND '2026-02-27' GROUP BY ALL ORDER BY ALL`},
		{"missing", `SELECT count(*) FROM daily WHERE balancing_day BETWEEN '2026-01-02' AND '2026-02-27' AND present < expected`},
	} {
		want, err := queryOf(b.Context(), computed, q.sql)
		if err != nil {
			b.Fatal(err)
		}
		got, err := queryOf(b.Context(), stored, q.sql)
		if err != nil {
			b.Fatal(err)
		}
		if fmt.Sprint(got.Rows) != fmt.Sprint(want.Rows) || len(want.Rows) == 0 || rs.used.Load() == 0 {
			b.Fatalf("%s: the rollup answers %v, readings %v", q.name, got.Rows, want.Rows)
		}
		for _, e := range []struct {
			name string
			e    *Engine
		}{{"readings", computed}, {"rollup", stored}} {
			b.Run(q.name+"/"+e.name, func(b *testing.B) {
				for b.Loop() {
					if _, err := queryOf(b.Context(), e.e, q.sql); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

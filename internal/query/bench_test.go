package query

import (
	"context"
	"testing"
)

// The cost of a query's own DuckDB instance: opening and closing it, and
// whole queries of growing reach.

func BenchmarkInstance(b *testing.B) {
	for b.Loop() {
		inst, err := open(context.Background(), Settings{Threads: 1})
		if err != nil {
			b.Fatal(err)
		}
		inst.close()
	}
}

func benchmarkQuery(b *testing.B, sql string) {
	s := newSource(b, loadProfile())
	for _, m := range []int{0, 1, 2} {
		s.addHot(quarterHours(1, jan2026.AddDate(0, m, 0), 96)...)
	}
	s.archive(feb2026)
	s.archive(mar2026)
	e, err := single(s.tab, s, Settings{Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := queryOf(context.Background(), e, sql); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkQueryNoTier(b *testing.B) { benchmarkQuery(b, `SELECT 1`) }

func BenchmarkQueryHot(b *testing.B) {
	benchmarkQuery(b, `SELECT count(*) FROM readings WHERE "from" >= '2026-03-01 06:00:00Z' AND "from" < '2026-03-01 07:00:00Z'`)
}

func BenchmarkQueryCold(b *testing.B) {
	benchmarkQuery(b, `SELECT count(*) FROM readings WHERE "from" >= '2026-01-01 06:00:00Z' AND "from" < '2026-01-01 07:00:00Z'`)
}

func BenchmarkQueryBoth(b *testing.B) { benchmarkQuery(b, `SELECT count(*) FROM readings`) }

package query

import (
	"context"
	"testing"
	"time"
)

// The cost of a query's own DuckDB instance: opening and closing it, and
// whole queries of growing reach.

func BenchmarkInstance(b *testing.B) {
	for b.Loop() {
		inst, err := start(context.Background(), Settings{Threads: 1}, 1)
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

// BenchmarkSmallResult runs one meter's hot day as a small result and,
// its analysis made to remember a large one, through the result table,
// alternately, and reports the time of the second over the first and the
// mean of their steps from describe on.
func BenchmarkSmallResult(b *testing.B) {
	s := newSource(b, loadProfile())
	for _, m := range []int{0, 1, 2} {
		s.addHot(quarterHours(1, jan2026.AddDate(0, m, 0), 96)...)
	}
	e, err := single(s.tab, s, Settings{Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	point := `SELECT "from", value FROM readings WHERE malo_id = '` + malo(1) + `' AND "from" >= '2026-03-01 00:00:00Z' AND "from" < '2026-03-02 00:00:00Z'`
	key, _ := analysisKey(point, e.first(), nil)
	var took, steps [2]time.Duration
	for b.Loop() {
		for large := range 2 {
			if a, ok := e.analysed.get(key); ok && large == 1 {
				a.memo.ran(boundedRows + 1)
			}
			begin := time.Now()
			res, err := queryOf(context.Background(), e, point)
			if err != nil || len(res.Rows) != 96 {
				b.Fatal(err, len(res.Rows))
			}
			took[large] += time.Since(begin)
			for _, st := range res.Timing.Steps {
				if st.Name == StepBounded || st.Name == StepCreate || st.Name == StepFirstPage || st.Name == StepDescribe {
					steps[large] += st.Took
				}
			}
		}
	}
	b.ReportMetric(float64(took[1])/float64(took[0]), "table/bounded")
	n := float64(b.N) * float64(time.Millisecond)
	b.ReportMetric(float64(steps[0])/n, "bounded-ms")
	b.ReportMetric(float64(steps[1])/n, "table-ms")
}

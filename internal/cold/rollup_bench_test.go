package cold

import (
	"context"
	"runtime/pprof"
	"slices"
	"testing"
	"time"

	"github.com/meterstore/meterstore/series"
)

// BenchmarkDailyRollupArchive archives a day of 500 (or 5000) meters'
// quarter hours a loop, each followed by the rollup's catch-up, in turns with the same
// archival on a tier that makes no rollup at all ("plain"). It reports
// what the rollup adds to an archival (rollup-%: archival and catch-up
// over the plain archival, less 100), the catch-up alone over its
// archival (catchup-%), the time of each and the rollup's bytes per
// series' day, and the median of each turn's shares beside the
// shares of the sums. Wall time swings with the machine's load; the process's
// CPU time (user and system, rusage) of each phase is reported beside it
// (cpu-rollup-%, cpu-catchup-%), measured alike. Both are given for an archival that prepares the rollup commit from its
// own rows ("sums") and, as the baseline, one that sums nothing and a
// catch-up that reads the window back ("read back").
//
//	go test -run '^$' -bench DailyRollupArchive ./internal/cold
func BenchmarkDailyRollupArchive(b *testing.B) {
	b.Run("sums", func(b *testing.B) { benchRollupArchive(b, false, 500) })
	b.Run("read back", func(b *testing.B) { benchRollupArchive(b, true, 500) })
	// The fixture size of issue 50's bench daily: a commit's fixed cost
	// weighs less beside a window ten times the rows.
	b.Run("sums 5000", func(b *testing.B) { benchRollupArchive(b, false, 5000) })
}

func benchRollupArchive(b *testing.B, readBack bool, meters int) {
	e, plain := newEnv(b, Options{}), newEnv(b, Options{})
	e.tier.rollupReadsBack = readBack
	plain.tier.rollupReadsBack = true // nor does it catch up: no rollup
	h, ph := e.ensure(b, loadProfile("power")), plain.ensure(b, loadProfile("power"))
	day := jan2026
	type times struct{ base, archive, rollup, cpuBase, cpuArchive, cpuRollup time.Duration }
	// plainFirst alternates which tier archives its day first, so that a
	// drift of the machine's load weighs on both alike.
	plainFirst := true
	step := func() (ts times, c Commit) {
		b.StopTimer()
		next := day.AddDate(0, 0, 1)
		var rs []series.Reading
		for i := range meters {
			rs = append(rs, quarterHours(i, day, 96)...)
		}
		b.StartTimer()
		plainPhase := func() {
			start, cpu0 := time.Now(), cpuTime(b)
			var err error
			pprof.Do(b.Context(), pprof.Labels("phase", "plain"), func(ctx context.Context) {
				_, err = plain.tier.Archive(ctx, ph, next, day, next, Readings(rs))
			})
			if err != nil {
				b.Fatal(err)
			}
			ts.base, ts.cpuBase = time.Since(start), cpuTime(b)-cpu0
		}
		if plainFirst {
			plainPhase()
		}
		start, cpu0 := time.Now(), cpuTime(b)
		var err error
		pprof.Do(b.Context(), pprof.Labels("phase", "archive"), func(ctx context.Context) {
			_, err = e.tier.Archive(ctx, h, next, day, next, Readings(rs))
		})
		if err != nil {
			b.Fatal(err)
		}
		mid, cpu1 := time.Now(), cpuTime(b)
		pprof.Do(b.Context(), pprof.Labels("phase", "catchup"), func(ctx context.Context) {
			c, err = e.tier.CatchUpRollup(ctx, h)
		})
		if err != nil || c.Rows == 0 {
			b.Fatalf("%+v, %v", c, err)
		}
		ts.archive, ts.rollup, ts.cpuArchive, ts.cpuRollup = mid.Sub(start), time.Since(mid), cpu1-cpu0, cpuTime(b)-cpu1
		if !plainFirst {
			plainPhase()
		}
		plainFirst = !plainFirst
		day = next
		return ts, c
	}
	// The first catch-up computes every day; the loop measures the ones
	// after.
	step()
	step()
	var sum times
	var bytes, rows int64
	// The share of each turn, whose median a load spike in a few turns
	// does not move as it moves the sums' ratio.
	var shares, cpuShares []float64
	for b.Loop() {
		x, c := step()
		sum.base, sum.archive, sum.rollup = sum.base+x.base, sum.archive+x.archive, sum.rollup+x.rollup
		sum.cpuBase, sum.cpuArchive, sum.cpuRollup = sum.cpuBase+x.cpuBase, sum.cpuArchive+x.cpuArchive, sum.cpuRollup+x.cpuRollup
		shares = append(shares, 100*float64(x.archive+x.rollup-x.base)/float64(x.base))
		cpuShares = append(cpuShares, 100*float64(x.cpuArchive+x.cpuRollup-x.cpuBase)/float64(x.cpuBase))
		bytes, rows = bytes+c.Bytes, rows+c.Rows
	}
	base, archive, rollup := sum.base, sum.archive, sum.rollup
	b.ReportMetric(float64(base.Milliseconds())/float64(b.N), "plain-ms/op")
	b.ReportMetric(float64(archive.Milliseconds())/float64(b.N), "archive-ms/op")
	b.ReportMetric(float64(rollup.Milliseconds())/float64(b.N), "rollup-ms/op")
	b.ReportMetric(100*float64(archive+rollup-base)/float64(base), "rollup-%")
	b.ReportMetric(median(shares), "median-rollup-%")
	b.ReportMetric(100*float64(rollup)/float64(archive), "catchup-%")
	b.ReportMetric(float64(bytes)/float64(rows), "B/series-day")
	b.ReportMetric(float64(sum.cpuBase.Milliseconds())/float64(b.N), "cpu-plain-ms/op")
	b.ReportMetric(float64((sum.cpuArchive+sum.cpuRollup).Milliseconds())/float64(b.N), "cpu-rollup-ms/op")
	b.ReportMetric(100*float64(sum.cpuArchive+sum.cpuRollup-sum.cpuBase)/float64(sum.cpuBase), "cpu-rollup-%")
	b.ReportMetric(median(cpuShares), "median-cpu-rollup-%")
	b.ReportMetric(100*float64(sum.cpuRollup)/float64(sum.cpuArchive), "cpu-catchup-%")
}

// median returns the median of xs, which it sorts.
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

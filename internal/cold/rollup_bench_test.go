package cold

import (
	"testing"
	"time"

	"github.com/meterstore/meterstore/series"
)

// BenchmarkDailyRollupArchive archives a day of 500 meters' quarter hours
// a loop, each followed by the rollup's catch-up, and reports the time of
// each and the rollup's share of the archival (rollup-%) and its bytes per
// series' day: the catch-up from the archival's sums ("sums") and, as the
// baseline, an archival that sums nothing and a catch-up that reads the
// window back ("read back").
//
//	go test -run '^$' -bench DailyRollupArchive ./internal/cold
func BenchmarkDailyRollupArchive(b *testing.B) {
	b.Run("sums", func(b *testing.B) { benchRollupArchive(b, false) })
	b.Run("read back", func(b *testing.B) { benchRollupArchive(b, true) })
}

func benchRollupArchive(b *testing.B, readBack bool) {
	const meters = 500
	e := newEnv(b, Options{})
	e.tier.rollupReadsBack = readBack
	h := e.ensure(b, loadProfile("power"))
	day := jan2026
	step := func() (archive, rollup time.Duration, c Commit) {
		b.StopTimer()
		next := day.AddDate(0, 0, 1)
		var rs []series.Reading
		for i := range meters {
			rs = append(rs, quarterHours(i, day, 96)...)
		}
		b.StartTimer()
		start := time.Now()
		if _, err := e.tier.Archive(b.Context(), h, next, day, next, Readings(rs)); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		c, err := e.tier.CatchUpRollup(b.Context(), h)
		if err != nil || c.Rows == 0 {
			b.Fatalf("%+v, %v", c, err)
		}
		day = next
		return mid.Sub(start), time.Since(mid), c
	}
	// The first catch-up computes every day; the loop measures the ones
	// after.
	step()
	step()
	var archive, rollup time.Duration
	var bytes, rows int64
	for b.Loop() {
		a, r, c := step()
		archive, rollup = archive+a, rollup+r
		bytes, rows = bytes+c.Bytes, rows+c.Rows
	}
	b.ReportMetric(float64(archive.Milliseconds())/float64(b.N), "archive-ms/op")
	b.ReportMetric(float64(rollup.Milliseconds())/float64(b.N), "rollup-ms/op")
	b.ReportMetric(100*float64(rollup)/float64(archive), "rollup-%")
	b.ReportMetric(float64(bytes)/float64(rows), "B/series-day")
}

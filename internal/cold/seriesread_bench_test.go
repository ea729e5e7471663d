package cold

import (
	"flag"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

var (
	benchMeters = flag.Int("series-meters", 1000, "meters of BenchmarkSeriesRead's fixture")
	benchDay    = flag.Bool("series-day", false, "BenchmarkSeriesRead reads a day, not the month")
)

// fleetDay returns the quarter hours of meters meters on the UTC day from
// start, in primary key order, with values of a few hundred distinct ones
// as a fleet's are.
func fleetDay(meters int, start time.Time, rng *rand.Rand) []series.Reading {
	out := make([]series.Reading, 0, meters*96)
	for m := range meters {
		for k := range 96 {
			from := start.Add(time.Duration(k) * 15 * time.Minute)
			out = append(out, series.Reading{
				MaLo: malo(m), OBIS: "1-1:1.29.0", From: from, To: from.Add(15 * time.Minute),
				Value: series.Decimal(rng.Int64N(500) * 1000), Unit: metering.KilowattHour,
				Quality: metering.TrueValue, Resolution: metering.QuarterHour,
				Version: 20260101000000, VersionScope: "9900000000003:" + from.Format("2006-01"),
				RecordedAt: recorded, BalancingDay: cal.BalancingDay(from, metering.Electricity),
			})
		}
	}
	return out
}

// BenchmarkSeriesRead reads one random meter's February, of a fleet
// archived day by day, with the footer cache warm: from the daily files
// as archived, and after the settled month's compaction.
func BenchmarkSeriesRead(b *testing.B) {
	e := newEnvAt(b, "file://"+b.TempDir(), Options{})
	decl := &series.Table{Name: "power", TimeModel: series.Interval, Commodity: metering.Electricity,
		Resolutions: []metering.Resolution{metering.QuarterHour}, Width: series.Daily}
	h, err := e.tier.Ensure(b.Context(), decl)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for from := feb2026; !from.After(mar2026); from = from.AddDate(0, 0, 1) {
		to := from.AddDate(0, 0, 1)
		if _, err := e.tier.Archive(b.Context(), h, to, from, to, Readings(fleetDay(*benchMeters, from, rng))); err != nil {
			b.Fatal(err)
		}
	}
	rd := NewSeriesReader(0, nil)
	month := series.Range{From: feb2026, To: mar2026}
	run := func(b *testing.B) {
		var rows int
		for b.Loop() {
			m := malo(rng.IntN(*benchMeters))
			q := month
			if *benchDay {
				q.To = q.From.AddDate(0, 0, 1)
			}
			q.MaLo, q.OBIS = []string{m}, []string{"1-1:1.29.0"}
			p, err := e.tier.Plan(b.Context(), h, q)
			if err == nil {
				p, err = p.Local(b.Context(), "")
			}
			if err != nil {
				b.Fatal(err)
			}
			rs, err := rd.Read(b.Context(), decl, p, SeriesFilter{MaLo: m, OBIS: "1-1:1.29.0", From: q.From, To: q.To, Marks: true})
			if err != nil {
				b.Fatal(err)
			}
			rows = len(rs)
		}
		b.ReportMetric(float64(rows), "readings/op")
	}
	b.Run("daily", run)
	c, err := e.tier.Compact(b.Context(), h, CompactOptions{Settled: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("compacted %d files into %d", c.Rewritten, c.Written)
	b.Run("compacted", run)
}

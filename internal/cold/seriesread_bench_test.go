package cold

import (
	"flag"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

var (
	benchMeters = flag.Int("series-meters", 1000, "meters of BenchmarkSeriesRead's fixture")
	benchDay    = flag.Bool("series-day", false, "BenchmarkSeriesRead reads a day, not the month")
	benchProps  = flag.String("series-props", "", "BenchmarkSeriesRead's table properties, key=value,...")
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
	if *benchProps != "" {
		props := iceberg.Properties{}
		for _, kv := range strings.Split(*benchProps, ",") {
			k, v, _ := strings.Cut(kv, "=")
			props[k] = v
		}
		ice, err := e.foreign.LoadTable(b.Context(), h.Identifier())
		if err != nil {
			b.Fatal(err)
		}
		tx := ice.NewTransaction()
		if err := tx.SetProperties(props); err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Commit(b.Context()); err != nil {
			b.Fatal(err)
		}
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
		cpu0 := cpuTime(b)
		for b.Loop() {
			m := malo(rng.IntN(*benchMeters))
			q := month
			if *benchDay {
				q.To = q.From.AddDate(0, 0, 1)
			}
			q.MaLo, q.OBIS = []string{m}, []string{"1-1:1.29.0"}
			p, err := e.tier.Plan(b.Context(), h, q)
			if err == nil {
				p, err = p.Local(b.Context(), nil)
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
		// The process's CPU time, which other work on the machine
		// inflates less than the wall time.
		b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	}
	footprint := func() {
		fp, err := e.tier.Footprint(b.Context(), h)
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("%d files, %.4f B a reading", fp.Files, fp.BytesPerReading())
		for _, c := range fp.Columns {
			b.Logf("  %s %.4f", c.Name, fp.ColumnBytesPerReading(c))
		}
		b.Logf("  overhead %.4f", float64(fp.OverheadBytes())/float64(fp.Readings))
	}
	footprint()
	b.Run("daily", run)
	c, err := e.tier.Compact(b.Context(), h, CompactOptions{Settled: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("compacted %d files into %d", c.Rewritten, c.Written)
	footprint()
	b.Run("compacted", run)
}

// cpuTime returns the CPU time the process has taken, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package hotbench_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/cmd/meterstore/internal/workload/hotbench"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/metering"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// BenchmarkWrite measures readings per second of realistic batches (100
// meter-days of quarter hours, 3% corrections) written with raw COPY into a
// plain table with the same columns, and through the hot tier with each
// integrity: exclusion constraints, statement checks, Write alone. `meterstore bench ingest` runs the same
// variants interleaved in one run and reports their ratios.
func BenchmarkWrite(b *testing.B) {
	for _, c := range []struct{ name, variant string }{
		{"raw_copy", hotbench.RawCopy},
		{"raw_copy_pk", hotbench.RawCopyPK},
		{"raw_copy_checks", hotbench.RawCopyChecks},
		{"hot_exclusion", hotbench.Exclusion},
		{"hot_no_exclusion", hotbench.NoExclusion},
		{"hot_database_enforced", hotbench.Statement},
	} {
		v := c.variant
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			pool, err := pgxpool.New(ctx, pgtest.NewDB(b))
			if err != nil {
				b.Fatal(err)
			}
			defer pool.Close()
			cal, err := metering.NewCalendar()
			if err != nil {
				b.Fatal(err)
			}
			f := hotbench.DefaultFixture()
			f.Meters = 10_000_000 // never exhausted
			gen, err := f.Start(cal)
			if err != nil {
				b.Fatal(err)
			}
			s, err := hotbench.NewSetup(ctx, pool, "bench", []string{v}, gen)
			if err != nil {
				b.Fatal(err)
			}
			rows := 0
			for b.Loop() {
				b.StopTimer()
				batch := gen.Next()
				b.StartTimer()
				if err := s.Write(ctx, v, batch); err != nil {
					b.Fatal(err)
				}
				rows += len(batch)
			}
			b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "readings/s")
			if n, err := s.Count(ctx, v); err != nil || n != int64(rows) {
				b.Fatalf("stored %d of %d readings: %v", n, rows, err)
			}
		})
	}
}

package hotbench_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/cmd/meterstore/internal/workload/hotbench"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// newPool returns a pool on a fresh database of the test server, closed
// when tb ends.
func newPool(tb testing.TB) *pgxpool.Pool {
	pool, err := pgxpool.New(context.Background(), pgtest.NewDB(tb))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

// TestRunFormats runs the format comparison tiny: both ingest variants
// must store every reading, and the same ones.
func TestRunFormats(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t)
	c := hotbench.DefaultConfig()
	c.Fixture.Meters, c.Fixture.MetersPerBatch, c.Fixture.CorrectionRate = 60, 25, 0.1
	c.Variants = hotbench.FormatVariants
	res, err := hotbench.Run(ctx, pool, c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != 66*96 || res.Batches != 3 || len(res.Variants) != 3 {
		t.Fatalf("%d rows in %d batches, %d variants", res.Rows, res.Batches, len(res.Variants))
	}
	for _, v := range res.Variants {
		if v.Rows != int64(res.Rows) || v.ReadingsPerSec <= 0 {
			t.Fatalf("%s: %d of %d rows stored at %.0f/s", v.Name, v.Rows, res.Rows, v.ReadingsPerSec)
		}
	}
	if res.MSCONSToCSV <= 0 {
		t.Fatalf("no MSCONS/CSV ratio: %+v", res)
	}
}

// TestSame shows the check that ends a format comparison failing on
// tables that differ in what they hold, though not in their counts.
func TestSame(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t)
	cal, err := metering.NewCalendar()
	if err != nil {
		t.Fatal(err)
	}
	f := hotbench.DefaultFixture()
	f.Meters, f.MetersPerBatch = 4, 2
	gen, err := f.Start(cal)
	if err != nil {
		t.Fatal(err)
	}
	s, err := hotbench.NewSetup(ctx, pool, "formats", hotbench.FormatVariants, gen)
	if err != nil {
		t.Fatal(err)
	}
	first := gen.Next()
	for _, v := range hotbench.FormatVariants {
		if err := s.Write(ctx, v, first); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Same(ctx, hotbench.CSVIngest, hotbench.MSCONSIngest); err != nil {
		t.Fatal(err)
	}
	second := gen.Next()
	if err := s.Write(ctx, hotbench.CSVIngest, second); err != nil {
		t.Fatal(err)
	}
	other := append([]series.Reading(nil), second...)
	other[7].Value += 1000 // one Wh more
	if err := s.Write(ctx, hotbench.MSCONSIngest, other); err != nil {
		t.Fatal(err)
	}
	if err := s.Same(ctx, hotbench.CSVIngest, hotbench.MSCONSIngest); !errors.Is(err, hotbench.ErrDiffer) {
		t.Fatalf("tables differing in one value: %v", err)
	}
}

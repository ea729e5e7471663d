package hot

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// day is the day the tests write; its partitions exist in every test tier.
var day = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// newTier returns a tier on a fresh database, with its pool.
func newTier(t testing.TB, opts Options) (*Tier, *pgxpool.Pool) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 16
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	h, err := New(pool, opts)
	if err != nil {
		t.Fatal(err)
	}
	return h, pool
}

// lastgang declares a quarter-hour electricity table.
func lastgang(name string) *series.Table {
	return &series.Table{
		Name:        name,
		TimeModel:   series.Interval,
		Commodity:   metering.Electricity,
		Resolutions: []metering.Resolution{metering.QuarterHour},
		Width:       series.Daily,
		Headroom:    24 * time.Hour,
	}
}

// declare ensures t and its partitions for day and the day after.
func declare(t testing.TB, h *Tier, tab *series.Table) {
	t.Helper()
	ctx := context.Background()
	if err := h.Ensure(ctx, tab); err != nil {
		t.Fatal(err)
	}
	if _, err := h.CreatePartitions(ctx, tab, day, day.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
}

// malo returns the i-th valid market location id.
func malo(i int) string {
	m, err := metering.MaLoFromPrefix(fmt.Sprintf("%010d", 1_000_000_000+i))
	if err != nil {
		panic(err)
	}
	return m.String()
}

// qh returns a quarter-hour reading of meter i in slot n of day.
func qh(i, n int, value series.Decimal, version uint64) series.Reading {
	from := day.Add(time.Duration(n) * 15 * time.Minute)
	return series.Reading{
		MaLo:         malo(i),
		OBIS:         "1-1:1.29.0",
		From:         from,
		To:           from.Add(15 * time.Minute),
		Value:        value,
		Unit:         metering.KilowattHour,
		Quality:      metering.TrueValue,
		Resolution:   metering.QuarterHour,
		Version:      version,
		VersionScope: "9900000000003:2026-03",
	}
}

// meterDay returns the 96 quarter hours of meter i on day.
func meterDay(i int, version uint64) []series.Reading {
	rs := make([]series.Reading, 96)
	for n := range rs {
		rs[n] = qh(i, n, series.Decimal((i*96+n)%5000*1000+123), version)
	}
	return rs
}

// mustWrite writes rows and fails the test on an error.
func mustWrite(t testing.TB, h *Tier, tab *series.Table, rows []series.Reading) series.Result {
	t.Helper()
	res, err := h.Write(context.Background(), tab, rows)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// scanAll returns every attached reading of tab.
func scanAll(t testing.TB, h *Tier, tab *series.Table) []series.Reading {
	t.Helper()
	var out []series.Reading
	if err := h.Scan(context.Background(), tab, series.Range{}, func(r series.Reading) error {
		out = append(out, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// wantError checks that err is an *Error of kind k naming exactly rows.
func wantError(t testing.TB, err error, k series.Kind, rows ...int) *series.Error {
	t.Helper()
	var e *series.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want *Error of kind %v", err, err, k)
	}
	if e.Kind != k {
		t.Fatalf("kind %v, want %v: %v", e.Kind, k, err)
	}
	if rows != nil && fmt.Sprint(e.Rows) != fmt.Sprint(rows) {
		t.Fatalf("rows %v, want %v: %v", e.Rows, rows, err)
	}
	return e
}

package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/meterstore/meterstore/internal/query"
)

// TestQueryColdUnreachable: with the cold tier's metadata gone, a query
// that needs it fails loudly; one entirely above W still answers from
// PostgreSQL, and says so.
func TestQueryColdUnreachable(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	s := e.open(t, Options{})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(5)); err != nil {
		t.Fatal(err)
	}
	for d := range 5 {
		mustWrite(t, s, []Reading{qh(1, d, 8, "A", 1, 1000)})
	}
	if _, err := s.Archive(ctx, "power", dayN(4)); err != nil {
		t.Fatal(err)
	}
	if w, _, _ := s.Watermark(ctx, "power"); !w.Equal(dayN(2)) {
		t.Fatalf("W = %v", w)
	}
	meta := filepath.Join(e.dir, "meterstore", "power", "metadata")
	if err := os.Rename(meta, meta+".gone"); err != nil {
		t.Fatal(err)
	}
	_, err := s.Query(ctx, "power", `SELECT count(*) FROM readings`)
	if !errors.Is(err, query.ErrColdUnreachable) {
		t.Fatalf("a query that needs the cold tier: %v", err)
	}
	res, err := s.Query(ctx, "power", `SELECT count(*) FROM readings WHERE "from" >= `+ts(dayN(3)))
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows[0][0] != int64(2) || !slices.Equal(res.Tiers, []string{"hot"}) {
		t.Errorf("above the hot floor: %v from %v, want 2 from hot", res.Rows[0][0], res.Tiers)
	}
}

// TestMetricsRecorded: the store's operations reach an installed meter
// provider, every instrument with its table.
func TestMetricsRecorded(t *testing.T) {
	ctx := t.Context()
	reader := sdkmetric.NewManualReader()
	s := newEnv(t).open(t, Options{Meters: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(3)); err != nil {
		t.Fatal(err)
	}
	rows := []Reading{qh(1, 0, 1, "A", 1, 1000), qh(1, 0, 2, "A", 1, 1000)}
	mustWrite(t, s, rows)
	mustWrite(t, s, rows)
	if _, err := s.Archive(ctx, "power", dayN(3)); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, []Reading{qh(1, 0, 1, "A", 2, 1500)}) // late: below W, the third row written
	mustQuery(t, s, `SELECT count(*) FROM readings`)
	s.Status(ctx, dayN(3))

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	sums := map[string]int64{}
	seen := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			seen[m.Name] = true
			if d, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, p := range d.DataPoints {
					if v, ok := p.Attributes.Value("table"); !ok || v.AsString() != "power" {
						t.Errorf("%s: attributes %v", m.Name, p.Attributes)
					}
					sums[m.Name] += p.Value
				}
			}
		}
	}
	if sums["meterstore.write.rows"] != 3 || sums["meterstore.write.duplicates"] != 2 || sums["meterstore.write.late_corrections"] != 1 {
		t.Errorf("write metrics %v", sums)
	}
	for _, name := range []string{"meterstore.archival.rows", "meterstore.archival.duration", "meterstore.query.duration",
		"meterstore.table.watermark_lag", "meterstore.table.partitions_ahead", "meterstore.table.invariant_violations", "meterstore.table.healthy", "meterstore.scan.rows"} {
		if !seen[name] {
			t.Errorf("%s was not recorded; recorded: %v", name, seen)
		}
	}
}

// TestQueryStream: a result past QueryOptions.MaxRows, which Query
// refuses, streams whole over both tiers, with the header before the
// first row; SQL DuckDB cannot bind fails with ErrInvalidQuery.
func TestQueryStream(t *testing.T) {
	ctx := t.Context()
	s := newEnv(t).open(t, Options{Query: QueryOptions{MaxRows: 2}})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(5)); err != nil {
		t.Fatal(err)
	}
	for d := range 5 {
		mustWrite(t, s, []Reading{qh(1, d, 8, "A", 1, 1000)})
	}
	if _, err := s.Archive(ctx, "power", dayN(4)); err != nil {
		t.Fatal(err)
	}
	const sql = `SELECT "from" FROM readings ORDER BY "from"`
	if _, err := s.Query(ctx, "power", sql); !errors.Is(err, ErrTooManyRows) {
		t.Fatalf("Query of 5 rows past max_rows 2: %v", err)
	}
	var hdr *ResultHeader
	n := 0
	err := s.QueryStream(ctx, "power", sql, func(h *ResultHeader) error { hdr = h; return nil }, func([]any) error {
		if hdr == nil {
			t.Error("a row before the header")
		}
		n++
		return nil
	})
	if err != nil || n != 5 {
		t.Fatalf("QueryStream: %d rows, %v", n, err)
	}
	if !slices.Equal(hdr.Tiers, []string{"cold", "hot"}) || !hdr.HasWatermark || !hdr.Watermark.Equal(dayN(2)) {
		t.Errorf("header %+v", hdr)
	}
	err = s.QueryStream(ctx, "power", `SELECT nonexistent FROM readings`, func(*ResultHeader) error { return nil }, func([]any) error { return nil })
	if !errors.Is(err, ErrInvalidQuery) || IsRetryable(err) {
		t.Errorf("an unknown column: %v", err)
	}
	if err := s.QueryStream(ctx, "nothing", `SELECT 1`, nil, nil); !errors.Is(err, ErrNoTable) {
		t.Errorf("no such table: %v", err)
	}
}

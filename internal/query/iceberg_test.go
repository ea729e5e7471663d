package query

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/consensus/bloblog"
	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/series"
)

// An icebergSource reads the cold tier from a real Iceberg table in a
// local warehouse; the hot tier stays in memory.
type icebergSource struct {
	*memSource
	tier  *cold.Tier
	h     *cold.Table
	cache *cold.Copies
}

func (s *icebergSource) Watermark(ctx context.Context) (time.Time, bool, error) {
	defer s.record("watermark", time.Time{}, time.Time{})()
	return s.tier.Watermark(ctx, s.h)
}

func (s *icebergSource) Cold(ctx context.Context, q series.Range) (cold.Plan, error) {
	defer s.record("cold", q.From, q.To)()
	p, err := s.tier.Plan(ctx, s.h, q)
	if err != nil {
		return cold.Plan{}, err
	}
	return p.Local(ctx, s.cache)
}

func (s *icebergSource) ColdAlone(ctx context.Context, q series.Range) (cold.Plan, error) {
	return s.Cold(ctx, q)
}

func (s *icebergSource) ColdAt(ctx context.Context, q series.Range, ref cold.SnapshotRef) (cold.Plan, error) {
	defer s.record("cold-at", q.From, q.To)()
	p, err := s.tier.PlanAt(ctx, s.h, q, ref)
	if err != nil {
		return cold.Plan{}, err
	}
	return p.Local(ctx, s.cache)
}

func newIcebergSource(t testing.TB, tab *series.Table) *icebergSource {
	t.Helper()
	wh, err := catalog.OpenWarehouse(t.Context(), "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wh.Bucket.Close() })
	l, err := bloblog.New(wh.Bucket, "_log/")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.New(catalog.Options{Warehouse: wh, Log: l, Check: cold.WatermarkCheck()})
	if err != nil {
		t.Fatal(err)
	}
	tier, err := cold.New(cat, cold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := tier.Ensure(t.Context(), tab)
	if err != nil {
		t.Fatal(err)
	}
	return &icebergSource{memSource: newSource(t, tab), tier: tier, h: h, cache: cold.NewCopies(cold.CopyOptions{Dir: t.TempDir()})}
}

// varied returns readings of location i in the month from start that use
// every column, the extremes of the decimals and NULLs.
func varied(i int, start time.Time) []series.Reading {
	rows := quarterHours(i, start, 96)
	for k := range rows {
		r := &rows[k]
		r.Version = 20260101000000 + uint64(k%7)
		r.Extra = map[string]string{"channel": []string{"A", "B"}[k%2]}
		switch k % 5 {
		case 0:
			r.Value, r.Version = series.MaxDecimal, 18446744073709551615
			r.MeLo, r.Subject = "DE0001234567890123456789012345678", "p-17"
			r.Extra["source"], r.Extra["seq"] = "MSCONS", "-9223372036854775808"
		case 1:
			r.Value, r.Version = -series.MaxDecimal, 0
			r.Extra["seq"] = "9223372036854775807"
		case 2:
			r.Value = -1
		}
	}
	return rows
}

// TestIcebergTier reads tables archived by the cold tier: the answers are
// those of the same readings read from the hot tier alone.
func TestIcebergTier(t *testing.T) {
	tab := loadProfile()
	s := newIcebergSource(t, tab)
	all := newSource(t, tab)
	for _, w := range [][2]time.Time{{jan2026, feb2026}, {feb2026, mar2026}} {
		var rows []series.Reading
		for i := range 3 {
			rows = append(rows, varied(i, w[0])...)
		}
		if _, err := s.tier.Archive(t.Context(), s.h, w[1], w[0], w[1], cold.Readings(inKeyOrder(rows))); err != nil {
			t.Fatal(err)
		}
		all.addHot(rows...)
	}
	march := varied(7, mar2026)
	s.addHot(march...)
	all.addHot(march...)
	s.floor = mar2026

	e, err := single(tab, s, Settings{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	ref := newEngine(t, all)
	for _, sql := range []string{
		`SELECT * FROM readings_versions ORDER BY ALL`,
		`SELECT * FROM readings ORDER BY ALL`,
		`SELECT * FROM readings WHERE "from" >= '2026-02-01 12:00:00Z' AND "from" < '2026-03-01 06:00:00Z' ORDER BY ALL`,
		`SELECT malo_id, channel, sum(value), max(version), count(seq), count(melo_id) FROM readings GROUP BY ALL ORDER BY ALL`,
	} {
		got, want := query(t, e, sql), query(t, ref, sql)
		if len(got.Rows) == 0 || fmt.Sprint(got.Rows) != fmt.Sprint(want.Rows) || !slices.Equal(got.Types, want.Types) {
			t.Fatalf("%s:\n iceberg %d rows %v\n    hot %d rows %v", sql, len(got.Rows), got.Types, len(want.Rows), want.Types)
		}
		if !got.HasWatermark || !got.Watermark.Equal(mar2026) {
			t.Fatalf("%s: watermark %v %v", sql, got.Watermark, got.HasWatermark)
		}
	}
	// February alone plans February's files only.
	s.Calls()
	res := query(t, e, `SELECT count(*) FROM readings_versions WHERE "from" >= '2026-02-01 00:00:00Z' AND "from" < '2026-02-02 00:00:00Z'`)
	if res.Rows[0][0].(int64) != 3*96 || !slices.Equal(res.Tiers, []string{"cold"}) {
		t.Fatalf("february: %v %v", res.Rows, res.Tiers)
	}
	p, err := s.tier.Plan(t.Context(), s.h, series.Range{From: feb2026, To: feb2026.Add(24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	all2, err := s.tier.Plan(t.Context(), s.h, series.Range{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Files) == 0 || len(p.Files) >= len(all2.Files) {
		t.Fatalf("february plans %d of %d files", len(p.Files), len(all2.Files))
	}
}

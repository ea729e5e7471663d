package hot

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// TestDictionaryLayoutOpened: a deployment whose table of integrity
// statement older code made (the dictionary layout, or the lean one) is
// opened by a fresh Tier, which keeps the table's layout: it reads
// what was written, writes redeliveries, corrections and new readings
// with their outcomes, reads them back through Scan, Read and
// ReadSeries, and archives a day (detach, scan of the detached partition,
// drop with its dictionary rows). A new table it declares is in the step
// layout.
func TestDictionaryLayoutOpened(t *testing.T) {
	for _, lay := range []layout{layoutDictionary, layoutLean} {
		t.Run(lay.String(), func(t *testing.T) { testLayoutOpened(t, lay) })
	}
}

func testLayoutOpened(t *testing.T, lay layout) {
	ctx := context.Background()
	old, pool := newTier(t, Options{})
	old.statementLayout = lay
	tab := lastgang("lastgang")
	declare(t, old, tab)
	next := day.Add(24 * time.Hour)
	if _, err := old.CreatePartitions(ctx, tab, day, next.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	shift := func(rs []series.Reading) []series.Reading {
		for i := range rs {
			rs[i].From, rs[i].To = rs[i].From.Add(24*time.Hour), rs[i].To.Add(24*time.Hour)
		}
		return rs
	}
	written := append(meterDay(1, 100), meterDay(2, 100)...)
	written[5].Quality = metering.Substitute
	written = append(written, shift(meterDay(1, 100))...)
	mustWrite(t, old, tab, written)

	fresh, err := New(pool, Options{})
	if err != nil {
		t.Fatal(err)
	}
	again := lastgang("lastgang")
	if err := fresh.Ensure(ctx, again); err != nil {
		t.Fatal(err)
	}
	if l, err := fresh.layoutOf(ctx, pool, again); err != nil || l != lay {
		t.Fatalf("opened: layout %q, %v; want %s", l, err, lay)
	}
	if res := mustWrite(t, fresh, again, written[:96]); res.Present != 96 {
		t.Fatalf("a redelivery: %+v", res)
	}
	correction := meterDay(1, 101)[:10]
	if res := mustWrite(t, fresh, again, correction); res.Superseded != 10 {
		t.Fatalf("a correction: %+v", res)
	}
	late := meterDay(2, 99)[:3]
	if res := mustWrite(t, fresh, again, late); res.Shadowed != 3 {
		t.Fatalf("an older version: %+v", res)
	}
	newMeter := meterDay(3, 100)
	if res := mustWrite(t, fresh, again, newMeter); res.Inserted != 96 {
		t.Fatalf("a new meter: %+v", res)
	}
	all := slices.Concat(written, correction, late, newMeter)

	// Scan: every reading as written.
	key := func(r series.Reading) string { return fmt.Sprint(r.MaLo, r.From.UnixMicro(), r.Version) }
	want := map[string]series.Reading{}
	for _, r := range all {
		r.Commodity = metering.Electricity
		want[key(r)] = r
	}
	got := scanAll(t, fresh, again)
	if len(got) != len(want) {
		t.Fatalf("scanned %d readings, want %d", len(got), len(want))
	}
	for _, g := range got {
		w, ok := want[key(g)]
		if g.RecordedAt.IsZero() || g.BalancingDay.Year != 2026 {
			t.Fatalf("scanned %+v: recorded_at or balancing day missing", g)
		}
		g.RecordedAt, g.BalancingDay = time.Time{}, metering.Date{}
		g.From, g.To = g.From.UTC(), g.To.UTC()
		w.From, w.To = w.From.UTC(), w.To.UTC()
		if !ok || !equalReading(g, w) {
			t.Fatalf("scanned\n%+v\nwant\n%+v", g, w)
		}
	}
	// Read: the winners, one per reading, of the highest version.
	snap, err := fresh.OpenSnapshot(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	r, err := snap.Read(ctx, again, series.Range{})
	if err != nil {
		t.Fatal(err)
	}
	winners := 0
	cols := make([]int, len(r.Shape().Rows.Columns))
	for i := range cols {
		cols[i] = i
	}
	for u := range r.Units(0) {
		c, err := r.Scan(ctx, 0, u, cols, true)
		if err != nil {
			t.Fatal(err)
		}
		for c.Next(ctx) {
			winners++
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := snap.Close(); err != nil {
		t.Fatal(err)
	}
	if winners != 4*96 {
		t.Fatalf("read %d winners, want %d", winners, 4*96)
	}
	res, err := fresh.ReadSeries(ctx, again, SeriesQuery{MaLo: malo(1), OBIS: "1-1:1.29.0", From: day, To: next})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Readings) != 96 {
		t.Fatalf("series: %d readings, want 96", len(res.Readings))
	}
	for _, s := range res.Readings {
		if v := uint64(100); s.From.Before(day.Add(150 * time.Minute)) {
			v = 101
			if s.Version != v {
				t.Fatalf("series: %v at version %d, want %d", s.From, s.Version, v)
			}
		}
	}

	// Archival of the first day: detach, read the detached partition,
	// drop it with its dictionary rows.
	if err := fresh.Detach(ctx, again, day); err != nil {
		t.Fatal(err)
	}
	n := 0
	p := Partition{Name: "lastgang_p20260302", From: day, To: next}
	if err := fresh.ScanPartition(ctx, again, p, 100, func(rs []series.Reading) error { n += len(rs); return nil }); err != nil || n != len(all)-96 {
		t.Fatalf("scanned %d readings of the detached partition, want %d (%v)", n, len(all)-96, err)
	}
	if err := fresh.Drop(ctx, again, day); err != nil {
		t.Fatal(err)
	}
	var dictRows int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM meterstore.lastgang_series WHERE bucket = $1) + (SELECT count(*) FROM meterstore.lastgang_attrs WHERE bucket = $1)`,
		day).Scan(&dictRows); err != nil || dictRows != 0 {
		t.Fatalf("%d dictionary rows of the dropped day left (%v)", dictRows, err)
	}
	if got := scanAll(t, fresh, again); len(got) != 96 {
		t.Fatalf("scanned %d readings after the drop, want 96", len(got))
	}

	// The code's new tables are in the step layout.
	other := lastgang("other")
	declare(t, fresh, other)
	if l, err := fresh.layoutOf(ctx, pool, other); err != nil || l != layoutStep {
		t.Fatalf("a new table: layout %q, %v; want step", l, err)
	}
}

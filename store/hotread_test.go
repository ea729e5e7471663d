package store

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/meterstore/meterstore/internal/query"
	"github.com/meterstore/meterstore/series"
)

// hookTier runs *hook, once, right after a hot read opens, after its
// snapshot: between the snapshot and the moment its rows cross, as a
// concurrent client would.
type hookTier struct {
	hotTier
	hook *func()
}

func (h hookTier) Read(ctx context.Context, snap query.HotSnapshot, t *series.Table, q series.Range) (query.HotRead, error) {
	r, err := h.hotTier.Read(ctx, snap, t, q)
	h.opened(err)
	return r, err
}

// SnapshotRead runs the hook after a snapshot taken with its first read.
func (h hookTier) SnapshotRead(ctx context.Context, conns int, t *series.Table, q series.Range) (query.HotSnapshot, query.HotRead, error) {
	snap, r, err := h.hotTier.SnapshotRead(ctx, conns, t, q)
	h.opened(err)
	return snap, r, err
}

// opened runs the hook, once, after a read opened without err.
func (h hookTier) opened(err error) {
	if f := *h.hook; err == nil && f != nil {
		*h.hook = nil
		f()
	}
}

// TestHotReadOneSnapshot reads the hot tier in parallel, on two
// connections, while an archival detaches and commits the day the read
// starts at and corrections land on every later day, between the moment
// the read opens and the moment its rows cross; day after day. Every
// reading acknowledged before the read is found exactly once, in
// readings_versions and resolved in readings, and none written after it.
func TestHotReadOneSnapshot(t *testing.T) {
	ctx := t.Context()
	tab := power()
	tab.Integrity = series.IntegrityAuto // the dictionary layout
	s := newEnv(t).open(t, Options{Tables: []Table{tab}})
	const meters, days = 3, 8
	if err := s.CreatePartitions(ctx, dayN(0), dayN(days)); err != nil {
		t.Fatal(err)
	}
	o := &oracle{rows: map[oracleKey]int64{}}
	var batch []Reading
	for d := range days {
		for i := range meters {
			for _, ch := range []string{"A", "B"} {
				for slot := range 96 {
					batch = append(batch, qh(i, d, slot, ch, 1, int64(d*1000+slot)))
				}
			}
		}
	}
	mustWrite(t, s, batch)
	o.ack(batch)
	tb, ct, _, err := s.opened(ctx, "power")
	if err != nil {
		t.Fatal(err)
	}
	var hook func()
	e := soleEngine(t, tb.decl, &query.TableSource{HotTier: hookTier{hotTier{s.hot}, &hook}, ColdTier: s.cold, Table: tb.decl, ColdTable: ct},
		query.Settings{Threads: 2, CacheDir: t.TempDir()})
	// With nothing archived yet, a query plans no cold files, and the
	// first archival below would put its rows in flight: the query
	// retries, and reads a later state.
	if out, err := s.Archive(ctx, "power", dayN(1).Add(testArchive.SettlementLag)); err != nil || len(out.Windows) != 1 {
		t.Fatalf("archive: %v, %+v", err, out)
	}
	cols := `SELECT malo_id, channel, epoch_us("from"), CAST(version AS VARCHAR), CAST(value AS VARCHAR) FROM `
	for d := 1; d < days-1; d++ {
		c := []struct {
			rel  string
			want func(*oracle) []string
		}{
			{"readings_versions", func(o *oracle) []string { return o.versions(time.Time{}, time.Time{}) }},
			{"readings", func(o *oracle) []string { return o.resolved(time.Time{}, time.Time{}) }},
		}[d%2]
		before := &oracle{rows: maps.Clone(o.rows)}
		hook = func() {
			// The archival of day d, after the settlement lag.
			out, err := s.Archive(ctx, "power", dayN(d+1).Add(testArchive.SettlementLag))
			if err != nil || len(out.Windows) == 0 {
				t.Errorf("day %d: archive: %v, %+v", d, err, out)
			}
			// A correction of every later day, in one write.
			var corr []Reading
			for later := d + 1; later < days; later++ {
				corr = append(corr, qh(later%meters, later, later*3, "A", uint64(100+d), 7))
			}
			mustWrite(t, s, corr)
			o.ack(corr)
		}
		st, err := e.Prepare(ctx, cols+c.rel, query.PrepareOptions{Table: "power"})
		var res *query.Result
		if err == nil {
			res, err = st.Query(ctx)
		}
		if err != nil {
			t.Fatalf("day %d: %s: %v", d, c.rel, err)
		}
		if hook != nil {
			t.Fatal("the hot read did not open")
		}
		if want := c.want(before); !slices.Equal(lines(result(res)), want) {
			t.Fatalf("day %d: %s: %d rows, want %d\n%s", d, c.rel, len(res.Rows), len(want), firstDiff(lines(result(res)), want))
		}
		if !slices.Equal(res.Tiers, []string{"cold", "hot"}) || res.Timing.HotRows == 0 {
			t.Fatalf("day %d: %s: tiers %v, %d hot rows", d, c.rel, res.Tiers, res.Timing.HotRows)
		}
	}
}

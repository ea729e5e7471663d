package store

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/series"
)

// A checkpoint is what was acknowledged at a moment: every write before
// it returned before it, and every write after it started after it.
type checkpoint struct {
	at      time.Time
	rows    map[oracleKey]int64
	current int64 // the snapshot current then
}

// TestOracleAsOf drives deliveries, corrections above and below W (late
// ones, several versions of one key in both tiers) and archival cycles,
// and records after each step what was acknowledged, and for each new
// cold snapshot what was acknowledged when it was committed. Then, for
// every snapshot S, reading as of S (by id, and by a time when S was
// current) equals the oracle of S's commit, and for every checkpoint T,
// reading as known at T equals the oracle of T.
func TestOracleAsOf(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(11, seed))
	t.Logf("seed %d", seed)
	o := &oracle{rows: map[oracleKey]int64{}}
	const meters, days = 2, 9
	if _, err := s.hot.CreatePartitions(ctx, s.tables[0].decl, dayN(0), dayN(days)); err != nil {
		t.Fatal(err)
	}
	ct := s.tables[0].cold
	watermark := func() (time.Time, bool) {
		t.Helper()
		w, ok, err := s.cold.Watermark(ctx, ct)
		if err != nil {
			t.Fatal(err)
		}
		return w, ok
	}

	snaps := map[int64]map[oracleKey]int64{} // per snapshot, what its commit acknowledged
	var (
		order   []int64 // snapshots, oldest first
		marks   []checkpoint
		current int64
		lates   int // writes with late rows
	)
	// settle gives every snapshot committed since the last call the
	// acknowledged rows acked, then records a checkpoint of o. Before and
	// after the checkpoint it lets the clock move past it and past the
	// newest commit stamp, so that no later write is recorded at or
	// before either.
	settle := func(acked map[oracleKey]int64) {
		t.Helper()
		ice, err := s.cold.Iceberg(ctx, ct)
		if err != nil {
			t.Fatal(err)
		}
		last := time.Time{}
		for _, sn := range ice.Metadata().Snapshots() {
			if _, ok := snaps[sn.SnapshotID]; ok {
				continue
			}
			snaps[sn.SnapshotID] = acked
			order = append(order, sn.SnapshotID)
			at, err := time.Parse(time.RFC3339Nano, sn.Summary.Properties[cold.SummaryKnownAt])
			if err != nil {
				t.Fatalf("snapshot %d: %v", sn.SnapshotID, err)
			}
			last = at
		}
		if cur := ice.CurrentSnapshot(); cur != nil {
			current = cur.SnapshotID
		}
		waitPast(t, last)
		at := time.Now().UTC().Truncate(time.Microsecond)
		marks = append(marks, checkpoint{at: at, rows: maps.Clone(o.rows), current: current})
		waitPast(t, at)
	}
	// write writes rows and acknowledges them in o; the snapshot of its
	// late rows, if any, acknowledged those alone on top of what was.
	write := func(rows []Reading) {
		t.Helper()
		w, hasW := watermark()
		before := maps.Clone(o.rows)
		var late []Reading
		for _, r := range rows {
			if hasW && r.From.Before(w) {
				late = append(late, r)
			}
		}
		res := mustWrite(t, s, rows)
		if res.Late != len(late) {
			t.Fatalf("%d late rows, want %d", res.Late, len(late))
		}
		o.ack(late)
		if len(late) > 0 {
			lates++
		}
		withLate := maps.Clone(o.rows)
		o.ack(rows)
		if len(late) == 0 {
			withLate = before
		}
		settle(withLate)
	}

	settle(maps.Clone(o.rows))
	m := s.Maintenance()
	version := uint64(1000)
	for d := range days {
		version++
		var batch []Reading
		for i := range meters {
			for _, ch := range []string{"A", "B"} {
				for slot := range 96 {
					batch = append(batch, qh(i, d, slot, ch, version, rng.Int64N(5_000_000)))
				}
			}
		}
		write(batch)
		if d > 0 {
			// A correction of earlier days, late below W, and one more
			// version of one key of day 0, which is cold soon.
			version++
			corr := []Reading{qh(0, 0, 5, "A", version, rng.Int64N(5_000_000))}
			for range 6 {
				corr = append(corr, qh(rng.IntN(meters), rng.IntN(d), rng.IntN(96), []string{"A", "B"}[rng.IntN(2)], version, rng.Int64N(5_000_000)))
			}
			write(dedupe(corr))
		}
		out := m.Cycle(ctx, dayN(d+1).Add(6*time.Hour))
		if f := out.Failures(); len(f) > 0 {
			t.Fatalf("day %d: maintenance: %v", d, f[0].Err)
		}
		settle(maps.Clone(o.rows))
	}
	if w, ok := watermark(); !ok || !w.After(dayN(3)) {
		t.Fatalf("archival did not move W far enough: %v %v", w, ok)
	}

	read := 0
	for _, id := range order {
		p, err := s.cold.PlanAt(ctx, ct, series.Range{}, cold.SnapshotRef{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		if !p.HasWatermark {
			continue
		}
		if len(snaps[id]) > 0 {
			read++
		}
		res := checkRead(t, s, ReadOptions{AsOfSnapshot: id}, snaps[id], "as of snapshot")
		if res.Snapshot != id || !res.AsOf || !res.Watermark.Equal(p.Watermark) || !res.Ceiling.Equal(p.Committed) {
			t.Fatalf("as of %d: header snapshot %d, W %v (want %v), ceiling %v (want %v)", id, res.Snapshot, res.Watermark, p.Watermark, res.Ceiling, p.Committed)
		}
	}
	if read < 3 || lates < 2 {
		t.Fatalf("only %d snapshots to read as of, %d writes with late rows", read, lates)
	}
	for i, mk := range marks {
		checkRead(t, s, ReadOptions{KnownAt: mk.at}, mk.rows, "known at")
		if mk.current != 0 && i%3 == 0 {
			res := checkRead(t, s, ReadOptions{AsOf: mk.at}, snaps[mk.current], "as of time")
			if res.Snapshot != mk.current {
				t.Fatalf("as of %v: snapshot %d, want %d", mk.at, res.Snapshot, mk.current)
			}
		}
	}
	t.Logf("%d snapshots (%d read as of), %d writes with late rows, %d checkpoints, %d readings acknowledged", len(order), read, lates, len(marks), len(o.rows))
}

// checkRead reads readings_versions and readings of power with opts and
// compares them with the oracle of rows.
func checkRead(t *testing.T, s *Store, opts ReadOptions, rows map[oracleKey]int64, what string) *Result {
	t.Helper()
	want := &oracle{rows: rows}
	cols := `SELECT malo_id, channel, epoch_us("from"), CAST(version AS VARCHAR), CAST(value AS VARCHAR) FROM `
	var res *Result
	for _, c := range []struct {
		rel  string
		want []string
	}{
		{"readings_versions", want.versions(time.Time{}, time.Time{})},
		{"readings", want.resolved(time.Time{}, time.Time{})},
	} {
		var err error
		if res, err = s.QueryAt(t.Context(), "power", cols+c.rel, opts); err != nil {
			t.Fatalf("%s %+v: %v", what, opts, err)
		}
		if got := lines(res); !slices.Equal(got, c.want) {
			t.Fatalf("%s %+v: %s: %d rows, want %d: %s", what, opts, c.rel, len(got), len(c.want), firstDiff(got, c.want))
		}
	}
	return res
}

// waitPast returns once the clock is past at, bounded: at is at most
// moments ahead.
func waitPast(t *testing.T, at time.Time) {
	t.Helper()
	for range 1000 {
		if time.Now().After(at.Add(time.Microsecond)) {
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
	t.Fatalf("the clock did not pass %v", at)
}

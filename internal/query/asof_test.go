package query

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/series"
)

// versioned returns rows as version v, recorded at at, with values that
// tell the versions apart.
func versioned(rows []series.Reading, v uint64, at time.Time) []series.Reading {
	out := slices.Clone(rows)
	for i := range out {
		out[i].Version, out[i].RecordedAt = v, at
		out[i].Value += series.Decimal(1000 * v)
	}
	return out
}

// waitPast returns once the clock is past t, so that a commit made next is
// stamped after it; bounded, since t is at most a few milliseconds ahead.
func waitPast(t *testing.T, at time.Time) {
	t.Helper()
	for range 1000 {
		if time.Now().After(at.Add(time.Millisecond)) {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("the clock did not pass %v", at)
}

// TestReadAsOf archives January, then February with a correction recorded
// after the first snapshot, then adds a late correction of January and a
// correction of March in the hot tier, and reads as of every snapshot and
// as known at times between them, against a real Iceberg table.
func TestReadAsOf(t *testing.T) {
	ctx := t.Context()
	tab := loadProfile()
	s := newIcebergSource(t, tab)
	e, err := single(tab, s, Settings{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	committed := func(id int64) time.Time {
		t.Helper()
		p, err := s.tier.PlanAt(ctx, s.h, series.Range{}, cold.SnapshotRef{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		return p.Committed
	}
	base := time.Now().Add(-time.Hour).UTC().Truncate(time.Microsecond)
	jan := versioned(quarterHours(0, jan2026, 8), 1, base)
	c1, err := s.tier.Archive(ctx, s.h, feb2026, jan2026, feb2026, cold.Readings(jan))
	if err != nil {
		t.Fatal(err)
	}
	t1 := committed(c1.SnapshotID)
	after1 := t1.Add(time.Microsecond)
	waitPast(t, after1)
	feb1 := versioned(quarterHours(0, feb2026, 8), 1, base)
	feb2 := versioned(feb1[:3], 2, after1)
	mar1 := versioned(quarterHours(0, mar2026, 8), 1, base)
	s.addHot(slices.Concat(feb1, feb2, mar1)...)
	s.floor = feb2026
	c2, err := s.tier.Archive(ctx, s.h, mar2026, feb2026, mar2026, cold.Readings(inKeyOrder(slices.Concat(feb1, feb2))))
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.hot, s.floor = slices.Clone(mar1), mar2026
	s.mu.Unlock()
	t2 := committed(c2.SnapshotID)
	after2 := t2.Add(time.Microsecond)
	waitPast(t, after2)
	late, err := s.tier.AppendLate(ctx, s.h, versioned(jan[:2], 2, after2))
	if err != nil || late.Superseded != 2 {
		t.Fatalf("late corrections: %+v %v", late, err)
	}
	s.addHot(versioned(mar1[:4], 2, after2)...)
	c3 := late.Commit.SnapshotID

	// count returns the versions a read shows, and per version how many.
	const versionsSQL = `SELECT CAST(version AS VARCHAR), count(*) FROM readings_versions GROUP BY ALL ORDER BY ALL`
	const currentSQL = `SELECT CAST(version AS VARCHAR), count(*) FROM readings GROUP BY ALL ORDER BY ALL`
	read := func(o ReadOptions, sql string) (*Result, string) {
		t.Helper()
		res, err := queryAt(ctx, e, sql, o)
		if err != nil {
			t.Fatalf("%+v: %s: %v", o, sql, err)
		}
		var out []string
		for _, r := range res.Rows {
			out = append(out, r[0].(string)+":"+strconv.FormatInt(r[1].(int64), 10))
		}
		return res, strings.Join(out, " ")
	}
	for _, c := range []struct {
		name       string
		o          ReadOptions
		versions   string // readings_versions per version
		resolved   string // readings per version
		snap       int64
		w          time.Time
		asOf       bool
		hasCeiling bool
	}{
		{"current", ReadOptions{}, "1:24 2:9", "1:15 2:9", c3, mar2026, false, false},
		{"as of S1", ReadOptions{AsOfSnapshot: c1.SnapshotID}, "1:24", "1:24", c1.SnapshotID, feb2026, true, true},
		{"as of after S1", ReadOptions{AsOf: after1}, "1:24", "1:24", c1.SnapshotID, feb2026, true, true},
		{"as of S2", ReadOptions{AsOfSnapshot: c2.SnapshotID}, "1:24 2:3", "1:21 2:3", c2.SnapshotID, mar2026, true, true},
		{"as of S3", ReadOptions{AsOfSnapshot: c3}, "1:24 2:9", "1:15 2:9", c3, mar2026, true, true},
		{"known at S1", ReadOptions{KnownAt: t1}, "1:24", "1:24", c3, mar2026, false, true},
		{"known at S2", ReadOptions{KnownAt: after1}, "1:24 2:3", "1:21 2:3", c3, mar2026, false, true},
		{"as of S3 known at S1", ReadOptions{AsOfSnapshot: c3, KnownAt: t1}, "1:24", "1:24", c3, mar2026, true, true},
	} {
		res, got := read(c.o, versionsSQL)
		if got != c.versions {
			t.Errorf("%s: readings_versions %s, want %s", c.name, got, c.versions)
		}
		if _, got := read(c.o, currentSQL); got != c.resolved {
			t.Errorf("%s: readings %s, want %s", c.name, got, c.resolved)
		}
		if res.Snapshot != c.snap || res.AsOf != c.asOf || !res.HasWatermark || !res.Watermark.Equal(c.w) || res.Ceiling.IsZero() == c.hasCeiling {
			t.Errorf("%s: header snapshot %d (want %d) as of %v, W %v (want %v), ceiling %v", c.name, res.Snapshot, c.snap, res.AsOf, res.Watermark, c.w, res.Ceiling)
		}
		if c.asOf && !slices.Equal(res.Tiers, []string{"cold", "hot"}) {
			t.Errorf("%s: tiers %v", c.name, res.Tiers)
		}
	}
	// Below W_S alone: S's files, no current tier.
	res, got := read(ReadOptions{AsOfSnapshot: c2.SnapshotID}, `SELECT CAST(version AS VARCHAR), count(*) FROM readings_versions WHERE "from" < '2026-02-01 00:00:00Z' GROUP BY ALL ORDER BY ALL`)
	if got != "1:8" || !slices.Equal(res.Tiers, []string{"cold"}) {
		t.Errorf("january as of S2: %s from %v", got, res.Tiers)
	}
	if _, err := queryAt(ctx, e, versionsSQL, ReadOptions{AsOfSnapshot: 12345}); !errors.Is(err, ErrNoSnapshot) {
		t.Errorf("as of an unknown snapshot: %v", err)
	}
	if _, err := queryAt(ctx, e, versionsSQL, ReadOptions{AsOf: base}); !errors.Is(err, ErrNoSnapshot) {
		t.Errorf("as of a time before the first snapshot: %v", err)
	}
}

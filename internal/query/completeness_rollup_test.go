package query

import (
	"slices"
	"testing"
	"time"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/series"
)

// TestCompletenessReadsRollup: completeness counts from daily, so from
// the stored rollup where it answers: a rollup deliberately planned for
// another snapshot decides what completeness shows, and an honest one
// gives what the readings give. A series silent all day, seen before the
// range or earlier in it, still counts as missing.
func TestCompletenessReadsRollup(t *testing.T) {
	tab := loadProfile()
	s := newIcebergSource(t, tab)
	d0, d1, d2, d3 := date(t, "2026-01-11"), date(t, "2026-01-12"), date(t, "2026-01-13"), date(t, "2026-01-14")
	var rows []series.Reading
	for _, d := range []struct {
		day    time.Time
		meters []int
	}{{cal.DayStart(d0), []int{1, 2, 3, 4}}, {cal.DayStart(d1), []int{1, 2, 3}}, {cal.DayStart(d2), []int{1, 2}}, {cal.DayStart(d3), []int{1, 2}}} {
		for _, i := range d.meters {
			rows = append(rows, quarterHours(i, d.day, 96)...)
		}
	}
	// Meter 2 misses its quarter hour at 10:00 on the 13th.
	gap := cal.DayStart(d2).Add(10 * time.Hour)
	rows = slices.DeleteFunc(rows, func(r series.Reading) bool { return r.MaLo == malo(2) && r.From.Equal(gap) })
	w := cal.DayStart(d3.AddDays(1))
	if _, err := s.tier.Archive(t.Context(), s.h, w, cal.DayStart(d0), w, cold.Readings(inKeyOrder(rows))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.tier.CatchUpRollup(t.Context(), s.h); err != nil {
		t.Fatal(err)
	}
	before, err := s.tier.Plan(t.Context(), s.h, series.Range{})
	if err != nil {
		t.Fatal(err)
	}
	// The missing quarter hour arrives late; the rollup stays behind.
	late := reading(2, gap, 41)
	if _, err := s.tier.AppendLate(t.Context(), s.h, []series.Reading{late}); err != nil {
		t.Fatal(err)
	}
	computed, err := single(tab, s, Settings{Threads: 1, MemoryLimit: "256MB"})
	if err != nil {
		t.Fatal(err)
	}
	honest := &rollupSource{icebergSource: s}
	stored, err := single(tab, honest, Settings{Threads: 1, MemoryLimit: "256MB"})
	if err != nil {
		t.Fatal(err)
	}
	stale := &rollupSource{icebergSource: s, latest: true}
	wrong, err := single(tab, stale, Settings{Threads: 1, MemoryLimit: "256MB"})
	if err != nil {
		t.Fatal(err)
	}
	const sql = `SELECT malo_id, balancing_day, expected, present, missing, surplus FROM completeness
		WHERE balancing_day BETWEEN '2026-01-12' AND '2026-01-14' ORDER BY ALL`
	line := func(i int, day string, present int) string {
		return malo(i) + " " + day + "T00:00:00 96 " + itoa(present) + " " + itoa(96-present) + " 0"
	}
	silent := []string{
		line(3, "2026-01-12", 96), line(3, "2026-01-13", 0), line(3, "2026-01-14", 0),
		line(4, "2026-01-12", 0), line(4, "2026-01-13", 0), line(4, "2026-01-14", 0),
	}
	want := func(gapPresent int) []string {
		out := []string{
			line(1, "2026-01-12", 96), line(1, "2026-01-13", 96), line(1, "2026-01-14", 96),
			line(2, "2026-01-12", 96), line(2, "2026-01-13", gapPresent), line(2, "2026-01-14", 96),
		}
		return append(out, silent...)
	}
	lines := func(e *Engine, opts ReadOptions) []string {
		t.Helper()
		res, err := queryAt(t.Context(), e, sql, opts)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range res.Rows {
			s := ""
			for i, v := range r {
				if i > 0 {
					s += " "
				}
				s += text(v)
			}
			out = append(out, s)
		}
		return out
	}
	for _, c := range []struct {
		name string
		e    *Engine
		opts ReadOptions
		want []string
	}{
		{"computed, current", computed, ReadOptions{}, want(96)},
		{"computed, before the late reading", computed, ReadOptions{AsOfSnapshot: before.SnapshotID}, want(95)},
		{"rollup, before the late reading", stored, ReadOptions{AsOfSnapshot: before.SnapshotID}, want(95)},
		// No rollup reflects the current snapshot: daily is computed.
		{"rollup behind, current", stored, ReadOptions{}, want(96)},
		// The rollup of the snapshot before, taken for the current one:
		// its row of meter 2's 13th, not the readings, decides.
		{"stale rollup, current", wrong, ReadOptions{}, want(95)},
	} {
		if got := lines(c.e, c.opts); !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got %v\nwant %v", c.name, got, c.want)
		}
	}
	if stale.used.Load() == 0 {
		t.Error("completeness did not read the stale rollup")
	}
	// Caught up, the current read takes the rollup and agrees.
	if _, err := s.tier.CatchUpRollup(t.Context(), s.h); err != nil {
		t.Fatal(err)
	}
	n := honest.used.Load()
	if got := lines(stored, ReadOptions{}); !slices.Equal(got, want(96)) {
		t.Errorf("rollup caught up, current:\n got %v\nwant %v", got, want(96))
	}
	if honest.used.Load() == n {
		t.Error("the current read of completeness did not use the rollup caught up")
	}
}

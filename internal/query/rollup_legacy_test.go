package query

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/series"
)

// TestRollupWithoutOnGrid: a rollup written before it had the column
// on_grid (a deployment of the previous release) does not answer daily or
// completeness: both are computed from the readings, exactly, while the
// rollup is current otherwise. The next catch-up adds the column and
// computes every day again, after which the reads take the rollup and
// agree. The old rollup is made as the previous release left it: a
// rollup's files rewritten, after its schema lost on_grid, without it.
func TestRollupWithoutOnGrid(t *testing.T) {
	ctx := t.Context()
	tab := loadProfile()
	s := newIcebergSource(t, tab)
	d0, d1, d2 := date(t, "2026-01-11"), date(t, "2026-01-12"), date(t, "2026-01-13")
	var rows []series.Reading
	for _, d := range []time.Time{cal.DayStart(d0), cal.DayStart(d1), cal.DayStart(d2)} {
		for i := 1; i <= 3; i++ {
			rows = append(rows, quarterHours(i, d, 96)...)
		}
	}
	// Meter 2 misses its quarter hour at 10:00 on the 12th.
	gap := cal.DayStart(d1).Add(10 * time.Hour)
	rows = slices.DeleteFunc(rows, func(r series.Reading) bool { return r.MaLo == malo(2) && r.From.Equal(gap) })
	// Two archivals, each caught up: two files of the rollup in January.
	for _, part := range []struct{ from, to time.Time }{
		{cal.DayStart(d0), cal.DayStart(d2)}, {cal.DayStart(d2), cal.DayStart(d2.AddDays(1))},
	} {
		in := slices.DeleteFunc(slices.Clone(rows), func(r series.Reading) bool { return r.From.Before(part.from) || !r.From.Before(part.to) })
		if _, err := s.tier.Archive(ctx, s.h, part.to, part.from, part.to, cold.Readings(inKeyOrder(in))); err != nil {
			t.Fatal(err)
		}
		if _, err := s.tier.CatchUpRollup(ctx, s.h); err != nil {
			t.Fatal(err)
		}
	}
	r := s.tier.RollupHandle(s.h)
	ice, err := s.tier.Iceberg(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	tx := ice.NewTransaction()
	if err := tx.UpdateSchema(true, true).DeleteColumn([]string{"on_grid"}).Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := s.tier.CompactRollup(ctx, s.h, 2); err != nil || c.SnapshotID == 0 {
		t.Fatalf("rewrite the rollup without on_grid: %+v, %v", c, err)
	}
	if ice, err = s.tier.Iceberg(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, has := ice.Schema().FindFieldByName("on_grid"); has {
		t.Fatal("the old rollup has on_grid")
	}
	st, err := s.tier.RollupState(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	src, err := s.tier.Iceberg(ctx, s.h)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Ok || st.Source != src.CurrentSnapshot().SnapshotID {
		t.Fatalf("the old rollup reflects %+v, not the table's current snapshot %d", st, src.CurrentSnapshot().SnapshotID)
	}

	computed, err := single(tab, s, Settings{Threads: 1, MemoryLimit: "256MB"})
	if err != nil {
		t.Fatal(err)
	}
	rs := &rollupSource{icebergSource: s}
	stored, err := single(tab, rs, Settings{Threads: 1, MemoryLimit: "256MB"})
	if err != nil {
		t.Fatal(err)
	}
	statements := []string{
		`SELECT malo_id, balancing_day, expected, present, missing, surplus FROM completeness
			WHERE balancing_day BETWEEN '2026-01-11' AND '2026-01-13' ORDER BY ALL`,
		`SELECT malo_id, balancing_day, present, on_grid, value_sum FROM daily ORDER BY ALL`,
	}
	answer := func(e *Engine, sql string) []string {
		t.Helper()
		res, err := queryOf(ctx, e, sql)
		if err != nil {
			t.Fatal(err)
		}
		return rowsOf(res)
	}
	var want [][]string
	for _, sql := range statements {
		want = append(want, answer(computed, sql))
	}
	// Three meters, three days; meter 2's 12th misses one quarter hour.
	if len(want[0]) != 9 || len(want[1]) != 9 || !slices.ContainsFunc(want[0], func(l string) bool { return strings.Contains(l, " 96 95 1 0]") }) {
		t.Fatalf("the readings give %v", want)
	}
	for i, sql := range statements {
		if got := answer(stored, sql); !slices.Equal(got, want[i]) {
			t.Errorf("old rollup, %s:\n got %s\nwant %s", sql, got, want[i])
		}
	}
	if n := rs.used.Load(); n != 0 {
		t.Errorf("the rollup without on_grid answered %d reads", n)
	}
	// verify does not compare it with the readings: it is behind.
	if v, err := s.tier.VerifyRollup(ctx, s.h, true); err != nil || !v.Behind || len(v.Problems) > 0 {
		t.Errorf("verify of the rollup without on_grid: %+v, %v; want it behind", v, err)
	}

	cm, err := s.tier.CatchUpRollup(ctx, s.h)
	if err != nil || cm.SnapshotID == 0 {
		t.Fatalf("catch up the old rollup: %+v, %v", cm, err)
	}
	got, st2, err := s.tier.RollupRows(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if st2.Source != st.Source || len(got) != 9 {
		t.Fatalf("the rollup rebuilt reflects %+v and holds %d rows, want %d and 9", st2, len(got), st.Source)
	}
	for _, x := range got {
		want := int64(96)
		if x.MaLo == malo(2) && x.Day == d1 {
			want = 95
		}
		if x.Present != want || x.OnGrid != want {
			t.Errorf("rebuilt %s %s: present %d, on_grid %d, want %d", x.MaLo, x.Day, x.Present, x.OnGrid, want)
		}
	}
	for i, sql := range statements {
		n := rs.used.Load()
		if got := answer(stored, sql); !slices.Equal(got, want[i]) {
			t.Errorf("rollup rebuilt, %s:\n got %s\nwant %s", sql, got, want[i])
		}
		if rs.used.Load() == n {
			t.Errorf("the rollup rebuilt did not answer %s", sql)
		}
	}
	if v, err := s.tier.VerifyRollup(ctx, s.h, true); err != nil || v.Behind || v.Days == 0 || len(v.Problems) > 0 {
		t.Errorf("verify of the rollup rebuilt: %+v, %v; want it compared, alike", v, err)
	}
	if cm, err := s.tier.CatchUpRollup(ctx, s.h); err != nil || cm.SnapshotID != 0 {
		t.Errorf("a catch-up of the rebuilt rollup: %+v, %v; want nothing to do", cm, err)
	}
}

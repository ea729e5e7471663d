package archive

import (
	"fmt"
	"slices"
	"testing"

	"github.com/meterstore/meterstore/internal/rollup"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// TestDailyRollupCycle: a cycle that archives windows writes the rollup of
// the days they settle, and the next cycle, with nothing due, catches it
// up with the late corrections the writer routed to the cold tier.
func TestDailyRollupCycle(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, 7)
	o := newOracle()
	fill(t, e, o, 2, 0, 1, 2, 3)
	a := e.archiver(t, dayConfig)
	cal, err := metering.NewCalendar()
	if err != nil {
		t.Fatal(err)
	}
	// check returns the rollup's rows that hold, and those of every
	// version the cold tier holds, of the days that end at or before W.
	check := func(what string) {
		t.Helper()
		rows, st, err := e.cold.RollupRows(ctx, e.cold.RollupHandle(e.ct))
		if err != nil {
			t.Fatal(err)
		}
		w, _, err := e.cold.Watermark(ctx, e.ct)
		if err != nil {
			t.Fatal(err)
		}
		var all []series.Reading
		for r, err := range e.cold.Scan(ctx, e.ct, series.Range{}) {
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, r)
		}
		var want, got []string
		for _, x := range rollup.Compute(e.t, cal, all, 0) {
			if !cal.BalancingDayEnd(x.Day, x.Commodity).After(w) {
				want = append(want, line(x))
			}
		}
		for _, x := range rollup.Current(rows) {
			got = append(got, line(x))
		}
		if !st.Ok || !st.Watermark.Equal(w) || len(want) == 0 || !slices.Equal(got, want) {
			t.Fatalf("%s: rollup at %v (%+v), %d rows, want %d at %v:\n got %v\nwant %v", what, st.Watermark, st, len(got), len(want), w, got, want)
		}
	}
	out, err := a.Cycle(ctx, e.t, e.ct, dayN(4))
	if err != nil || out.RollupSnapshot == 0 || out.RollupErr != "" {
		t.Fatalf("first cycle: %+v, %v", out, err)
	}
	check("after the first cycle")
	wr := NewRouter(e.hot, e.cold)
	if _, err := wr.Write(ctx, e.t, e.ct, []series.Reading{qh(0, 0, 5, 2, 42), qh(1, 1, 7, 2, 44)}); err != nil {
		t.Fatal(err)
	}
	out, err = a.Cycle(ctx, e.t, e.ct, dayN(4))
	if err != nil || len(out.Windows) != 0 || out.RollupSnapshot == 0 {
		t.Fatalf("cycle after the late corrections: %+v, %v", out, err)
	}
	check("after the late corrections")
	out, err = a.Cycle(ctx, e.t, e.ct, dayN(4))
	if err != nil || out.RollupSnapshot != 0 {
		t.Fatalf("cycle with nothing new: %+v, %v", out, err)
	}
	// Cycles of a window each, after a caught-up rollup: their days come
	// from the rows the archival wrote, not a read of them.
	fill(t, e, o, 2, 4, 5)
	for _, now := range []int{5, 6} {
		out, err = a.Cycle(ctx, e.t, e.ct, dayN(now))
		if err != nil || len(out.Windows) != 1 || out.RollupSnapshot == 0 || out.RollupErr != "" {
			t.Fatalf("cycle on day %d: %+v, %v", now, out, err)
		}
		check(fmt.Sprintf("after the cycle on day %d", now))
	}
}

func line(x rollup.Row) string {
	x.Version, x.MaxRecord = 0, x.MaxRecord.UTC()
	return fmt.Sprintf("%+v", x)
}

package cold

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/meterstore/meterstore/series"
)

// TestRollupPlanVersions checks that a rollup's plan gives each file the
// range of its rows' rollup versions from the files' metrics: one
// version after one catch-up, a higher one after late corrections, and
// after a compaction; the plan's ranges cover exactly the versions its
// rows hold.
// The query engine reads the rows without resolving them where no file
// is above the lowest version, so a range too narrow would hide a
// correction.
func TestRollupPlanVersions(t *testing.T) {
	e := newEnv(t, Options{})
	f := &rollupFixture{e: e, tab: loadProfile("power"), rng: rand.New(rand.NewPCG(46, 1))}
	f.h = e.ensure(t, f.tab)
	// check returns the plan's lowest and highest version after it
	// compared them with the rows'.
	check := func(what string) (lo, hi int64) {
		t.Helper()
		if _, err := e.tier.CatchUpRollup(t.Context(), f.h); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		p, _, ok, err := e.tier.PlanRollupCurrent(t.Context(), f.h, series.Range{})
		if err != nil || !ok || len(p.Files) == 0 || len(p.Versions) != len(p.Files) {
			t.Fatalf("%s: plan %+v, %v, %v", what, p, ok, err)
		}
		for i, v := range p.Versions {
			if !v.Known || v.Lo > v.Hi {
				t.Fatalf("%s: file %s: versions %+v", what, p.Files[i], v)
			}
			if i == 0 || v.Lo < lo {
				lo = v.Lo
			}
			if i == 0 || v.Hi > hi {
				hi = v.Hi
			}
		}
		rows, _, err := e.tier.RollupRows(t.Context(), e.tier.RollupHandle(f.h))
		if err != nil {
			t.Fatal(err)
		}
		rlo, rhi := rows[0].Version, rows[0].Version
		for _, r := range rows {
			rlo, rhi = min(rlo, r.Version), max(rhi, r.Version)
		}
		if lo != rlo || hi != rhi {
			t.Fatalf("%s: the plan's versions lie in [%d, %d], the rows' in [%d, %d]", what, lo, hi, rlo, rhi)
		}
		return lo, hi
	}
	f.archive(t, time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC))
	if lo, hi := check("one catch-up"); lo != hi {
		t.Fatalf("one catch-up: versions [%d, %d], want one", lo, hi)
	}
	f.late(t, 10)
	if lo, hi := check("late corrections"); lo >= hi {
		t.Fatalf("late corrections: versions [%d, %d], want a higher one", lo, hi)
	}
	if _, err := e.tier.CompactRollup(t.Context(), f.h, 2); err != nil {
		t.Fatal(err)
	}
	check("compaction")
}

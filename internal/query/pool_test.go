package query

import (
	"testing"
)

// TestOnePoolForAllTables: the statements of two tables take their DuckDB
// instances from the engine's one pool: each takes the instance the one
// before it left warm, whichever table it read, so that the deployment
// starts one instance a statement and one ahead, not one ahead per table.
func TestOnePoolForAllTables(t *testing.T) {
	tt := newTwoTables(t)
	e := tt.ePower
	defer e.Close()
	before := e.spare.started.Load()
	const n = 6
	for i := range n {
		sql := `SELECT count(*) FROM readings`
		if i%2 == 1 {
			sql = `SELECT count(*) FROM gas.readings`
		}
		// The statement before started the spare in the background.
		e.spare.fills.Wait()
		if c := count(t, e, sql); c == 0 {
			t.Fatalf("%s: no rows", sql)
		}
	}
	e.spare.fills.Wait()
	if got := e.spare.started.Load() - before; got != n {
		t.Errorf("%d statements of two tables started %d instances, want %d: one spare each", n, got, n)
	}
	if cold := e.spare.cold.Load(); cold != 0 {
		t.Errorf("%d statements found no warm instance", cold)
	}
	if e.spare.started.Load() != n+1 {
		t.Errorf("the engine of two tables started %d instances in all, want %d: one ahead for the deployment, not one per table", e.spare.started.Load(), n+1)
	}
}

// TestSpareAwaitedWhileStarting: a statement that comes while the spare
// is still starting (DuckDB takes milliseconds to start, and the
// statements of a series follow each other at once) waits for it instead
// of starting another instance beside it: no statement opens its own,
// and the engine starts one instance per statement and one ahead.
func TestSpareAwaitedWhileStarting(t *testing.T) {
	e, err := New(Settings{Threads: 2, CacheDir: t.TempDir()}, Tables{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const n = 5
	for range n {
		// No waiting for the fill: the next take comes while the spare
		// the last one started is starting.
		inst, err := e.spare.take(t.Context(), false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := inst.conn.ExecContext(t.Context(), `SELECT 1`); err != nil {
			t.Fatal(err)
		}
		e.spare.retire(inst)
	}
	e.spare.fills.Wait()
	if cold := e.spare.cold.Load(); cold != 0 {
		t.Errorf("%d of %d statements that followed each other at once started an instance of their own beside the spare starting", cold, n)
	}
	if got := e.spare.started.Load(); got != n+1 {
		t.Errorf("%d statements started %d instances, want %d", n, got, n+1)
	}
}

// TestInstanceStartedOnItsThreads: a statement across both tiers takes an
// instance started on the engine's threads and one of the hot tier alone
// an instance started on one, so that no lockdown changes an instance's
// threads (which purges DuckDB's allocator). The first statement of a
// text is analysed on an instance taken before it knew it scans files,
// and the first of each kind finds no instance of its threads started
// ahead: after those, none is rethreaded or started cold, and both answer
// as before.
func TestInstanceStartedOnItsThreads(t *testing.T) {
	s := newSource(t, loadProfile())
	s.addHot(quarterHours(1, jan2026, 96)...)
	s.archive(feb2026)
	s.addHot(quarterHours(1, feb2026, 96)...)
	e, err := single(s.tab, s, Settings{Threads: 2, MemoryLimit: "256MB", CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	both := `SELECT count(*) FROM readings`
	hot := `SELECT count(*) FROM readings WHERE "from" >= TIMESTAMPTZ '2026-02-01 00:00:00+00'`
	for _, sql := range []string{both, hot, both, hot} {
		if c := count(t, e, sql); c == 0 {
			t.Fatalf("%s: no rows", sql)
		}
		e.settled()
	}
	rethreaded, cold := e.spare.rethreaded.Load(), e.spare.cold.Load()
	for range 3 {
		for sql, want := range map[string]int64{both: 192, hot: 96} {
			if c := count(t, e, sql); c != want {
				t.Fatalf("%s: %d rows, want %d", sql, c, want)
			}
			e.settled()
		}
	}
	if n := e.spare.rethreaded.Load() - rethreaded; n != 0 {
		t.Errorf("%d of 6 statements of analysed texts changed their instance's threads", n)
	}
	if n := e.spare.cold.Load() - cold; n != 0 {
		t.Errorf("%d of 6 statements found no instance of their threads started ahead", n)
	}
}

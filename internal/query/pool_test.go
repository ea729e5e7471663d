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
		inst, err := e.spare.take(t.Context())
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

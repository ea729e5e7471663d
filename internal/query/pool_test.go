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

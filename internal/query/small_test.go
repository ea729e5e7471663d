package query

import (
	"testing"
)

// TestStatementSmall: Small, known once Prepare has read nothing of any
// tier, takes one meter's day for small and every meter's scan for
// large, also once the scan gave a one-row result (which the bounded
// path takes for small), and one meter's day whose last result was large
// for large.
func TestStatementSmall(t *testing.T) {
	s := threeMonths(t)
	e := newEngine(t, s)
	day := ` AND "from" >= TIMESTAMPTZ '2026-02-28 23:00:00+00' AND "from" < TIMESTAMPTZ '2026-03-01 23:00:00+00'`
	point := `SELECT "from", value FROM readings WHERE malo_id = '` + malo(1) + `'` + day
	scan := `SELECT count(*) FROM readings WHERE true` + day
	small := func(text string) bool {
		t.Helper()
		s.Calls()
		st, err := e.Prepare(t.Context(), text, PrepareOptions{Table: e.first()})
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		defer st.Close()
		if c := s.Calls(); len(c) > 0 {
			t.Fatalf("%s: Prepare read %v", text, c)
		}
		return st.Small()
	}
	for run := range 2 {
		if !small(point) {
			t.Errorf("one meter's day, run %d: not small", run)
		}
		if small(scan) {
			t.Errorf("every meter's count of a day, run %d: small", run)
		}
		if !small(`SELECT 42`) {
			t.Errorf("a statement of no table, run %d: not small", run)
		}
		query(t, e, point)
		if n := count(t, e, scan); n == 0 {
			t.Fatal("no readings that day")
		}
		query(t, e, `SELECT 42`)
	}
	forget(t, e, point)
	if small(point) {
		t.Error("one meter's day whose last result was large: small")
	}
}

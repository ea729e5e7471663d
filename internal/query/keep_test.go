package query

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"testing"
	"time"
)

// janSQL bounds a statement to January 2026, which coldEngine archived.
const janSQL = `"from" >= TIMESTAMPTZ '2026-01-01 00:00:00+00' AND "from" < TIMESTAMPTZ '2026-02-01 00:00:00+00'`

// coldEngine returns an engine over one table whose two meters' first
// January days are cold, and nothing hot.
func coldEngine(t *testing.T) *Engine {
	t.Helper()
	s := newSource(t, loadProfile())
	s.columns = true
	s.addHot(quarterHours(1, jan2026, 96)...)
	s.addHot(quarterHours(2, jan2026, 96)...)
	s.archive(feb2026)
	e, err := single(s.tab, s, Settings{Threads: 1, MemoryLimit: "256MB", CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// settled waits until the ducks of ended statements are kept or closed,
// and the spares being started are kept or closed (a spare started when
// one was given back is closed: retiring must not grow during its Wait).
func (e *Engine) settled() {
	e.spare.fills.Wait()
	e.spare.retiring.Wait()
}

// TestKeptDuckServesNextStatement: a statement over the same cold files
// as the one before runs on the duck that one left, locked down and with
// its views, and answers the same; the engine starts no DuckDB for it.
func TestKeptDuckServesNextStatement(t *testing.T) {
	e := coldEngine(t)
	q := `SELECT malo_id, sum(value) AS kwh, count(*) AS n FROM readings WHERE ` + janSQL + ` GROUP BY malo_id ORDER BY malo_id`
	first := fmt.Sprint(query(t, e, q).Rows)
	e.settled()
	e.spare.fills.Wait()
	started := e.spare.started.Load()
	for range 3 {
		if got := fmt.Sprint(query(t, e, q).Rows); got != first {
			t.Fatalf("on a kept duck: %s, want %s", got, first)
		}
		e.settled()
	}
	if e.kept.reused != 3 {
		t.Errorf("%d of 3 statements over the same files ran on a kept duck", e.kept.reused)
	}
	e.spare.fills.Wait()
	if n := e.spare.started.Load() - started; n != 0 {
		t.Errorf("3 statements on kept ducks started %d DuckDB instances", n)
	}
}

// TestKeptDuckForNewText: a statement whose text the engine has not seen
// is analysed on the spare, and still runs on a duck kept locked down
// alike; the spare it analysed on holds nothing of it and stays a spare.
func TestKeptDuckForNewText(t *testing.T) {
	e := coldEngine(t)
	q := func(i int) string {
		return fmt.Sprintf(`SELECT malo_id, sum(value) + %d AS kwh FROM readings WHERE `+janSQL+` GROUP BY malo_id ORDER BY malo_id`, i)
	}
	first := query(t, e, q(0)).Rows
	e.settled()
	for i := 1; i <= 3; i++ {
		rows := query(t, e, q(i)).Rows
		if len(rows) != len(first) || len(rows) == 0 {
			t.Fatalf("statement %d: %d rows, want %d", i, len(rows), len(first))
		}
		if got, want := fmt.Sprint(rows[0][1]), fmt.Sprint(first[0][1]); got == want {
			t.Fatalf("statement %d answered %s, the first statement's sum: its own text did not run", i, got)
		}
		e.settled()
	}
	if e.kept.reused != 3 {
		t.Errorf("%d of 3 statements of new texts over the same files ran on a kept duck", e.kept.reused)
	}
	e.spare.fills.Wait()
	if e.spare.detach(e.spare.threads(false)) == nil {
		t.Error("no spare after statements that analysed on it")
	}
}

// TestKeptDuckLeavesNothing: a statement that seeds DuckDB's random
// numbers and leaves its result table behind hands the next statement,
// on the same kept duck, neither: the next one's random() is not the
// seeded sequence's first value, and it computes its own result table.
func TestKeptDuckLeavesNothing(t *testing.T) {
	e := coldEngine(t)
	next := `SELECT random() AS r FROM readings WHERE ` + janSQL
	query(t, e, next)
	e.settled()
	// Not small: its result is computed into the result table.
	query(t, e, `SELECT "from", value, setseed(0.25) AS s FROM readings WHERE `+janSQL)
	e.settled()
	res := query(t, e, next)
	// The second statement, new, ran on the first one's duck, and the
	// third on the second's.
	if e.kept.reused != 2 {
		t.Fatalf("the statements ran on a kept duck %d times, want twice", e.kept.reused)
	}
	var got []float64
	for _, r := range res.Rows {
		got = append(got, r[0].(float64))
	}
	slices.Sort(got)
	if seeded := randomAfterSeed(t, 0.25, len(got)); slices.Equal(got, seeded) {
		t.Errorf("random() on the kept duck gave the %d values that follow the last statement's setseed(0.25)", len(got))
	}
}

// randomAfterSeed returns, sorted, the n values of DuckDB's random() after
// setseed(s).
func randomAfterSeed(t *testing.T, s float64, n int) []float64 {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), fmt.Sprintf(`SET threads = 1; SELECT setseed(%v)`, s)); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.QueryContext(t.Context(), fmt.Sprintf(`SELECT random() FROM range(%d)`, n))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []float64
	for rows.Next() {
		var r float64
		if err := rows.Scan(&r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestKeptDuckViewsReplaced: a statement on a kept duck whose views were
// another's (a recorded_at ceiling that hid every row) reads the tiers
// through its own.
func TestKeptDuckViewsReplaced(t *testing.T) {
	e := coldEngine(t)
	q := `SELECT count(*) FROM readings WHERE ` + janSQL
	hidden, err := queryAt(t.Context(), e, q, ReadOptions{KnownAt: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	if n := hidden.Rows[0][0]; n != int64(0) {
		t.Fatalf("known at 2000: %v rows, want none", n)
	}
	e.settled()
	if n := count(t, e, q); n != 2*96 {
		t.Errorf("after a statement known at 2000: %d rows, want %d", n, 2*96)
	}
	if e.kept.reused != 1 {
		t.Errorf("the second statement ran on a kept duck %d times, want once", e.kept.reused)
	}
}

// TestKeptDuckCatalogChecked: a kept duck that holds anything besides
// what a duck starts with and its views is not reset for another
// statement.
func TestKeptDuckCatalogChecked(t *testing.T) {
	e := coldEngine(t)
	query(t, e, `SELECT count(*) FROM readings WHERE `+janSQL)
	e.settled()
	var d *duck
	for _, list := range e.kept.byKey {
		d = list[0]
	}
	if d == nil {
		t.Fatal("no duck kept")
	}
	ctx := context.Background()
	if !d.reset(ctx, e.kept.base) {
		t.Fatal("a kept duck as its statement left it is not reset")
	}
	if _, err := d.conn.ExecContext(ctx, `CREATE TABLE meterstore.main.leftover AS SELECT 42 AS i`); err != nil {
		t.Fatal(err)
	}
	if d.reset(ctx, e.kept.base) {
		t.Error("a duck holding a table of its own is reset for the next statement")
	}
}

// TestKeptDuckNotForRelations: a statement that reads the in-memory
// relations, which hold the rows its caller may see, leaves its duck to
// no other statement. It reads nothing else: a statement that reads hot
// rows too is not kept for that alone. Two rules refuse it, the
// statement's (no relations) and the catalog check after it (their
// tables are left): only without both is its duck kept.
func TestKeptDuckNotForRelations(t *testing.T) {
	e := coldEngine(t)
	e.SetRelations([]Relation{{Schema: "system", Name: "secrets", Columns: []Column{{Name: "v", Type: "VARCHAR"}}, Rows: [][]any{{"x"}}}})
	q := `SELECT count(*) FROM system.secrets`
	for range 2 {
		query(t, e, q)
		e.settled()
	}
	if e.kept.reused != 0 || e.kept.n != 0 {
		t.Errorf("a statement over the relations left its duck: %d kept, %d reused", e.kept.n, e.kept.reused)
	}
}

package store

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
)

// postgresAway makes the test's database refuse every connection and ends
// the ones it has, the store's pool's among them, as a database that is
// down does; the returned function lets connections in again, and runs at
// cleanup if the test does not call it.
func postgresAway(t *testing.T, e *testEnv) (restore func()) {
	t.Helper()
	ctx := t.Context()
	cfg := e.pool.Config().ConnConfig.Copy()
	db := cfg.Database
	cfg.Database = "postgres"
	admin, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{db}.Sanitize()+` ALLOW_CONNECTIONS false`); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, db); err != nil {
		t.Fatal(err)
	}
	done := false
	restore = func() {
		if done {
			return
		}
		done = true
		if _, err := admin.Exec(t.Context(), `ALTER DATABASE `+pgx.Identifier{db}.Sanitize()+` ALLOW_CONNECTIONS true`); err != nil {
			t.Error(err)
		}
		admin.Close(t.Context())
	}
	t.Cleanup(restore)
	return restore
}

// TestReadHistorical: with PostgreSQL down, a historical read answers the
// rows below W from the cold tier alone, and says it did not see the rows
// at or above W; the same statement read as usual fails, so the
// historical read did not touch the database. The catalog's log is on the
// object store: a log in PostgreSQL is the cold tier's metadata too.
func TestReadHistorical(t *testing.T) {
	ctx := t.Context()
	e := newEnvOn(t, LogObjectStore)
	s := e.open(t, Options{})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(6)); err != nil {
		t.Fatal(err)
	}
	for d := range 6 {
		mustWrite(t, s, []Reading{qh(1, d, 4, "A", 1, 1000), qh(2, d, 5, "B", 1, 2000)})
	}
	if out, err := s.Archive(ctx, "power", dayN(5)); err != nil || !out.Watermark.Equal(dayN(3)) {
		t.Fatalf("archive: %+v, %v", out, err)
	}
	mustQuery(t, s, `SELECT count(*) FROM readings`) // the store has opened the table
	const sql = `SELECT count(*), sum(value) FROM readings`
	st, err := s.Prepare(ctx, sql, StatementOptions{Table: "power", Read: ReadOptions{Mode: ReadHistorical}})
	if err != nil {
		t.Fatal(err)
	}
	want, err := st.Query(ctx)
	if err != nil {
		t.Fatal(err)
	}
	restore := postgresAway(t, e)
	if _, err := s.Query(ctx, "power", sql); err == nil {
		t.Fatal("a query of both tiers answered with PostgreSQL down")
	}
	st, err = s.Prepare(ctx, sql, StatementOptions{Table: "power", Read: ReadOptions{Mode: ReadHistorical}})
	if err != nil {
		t.Fatalf("historical, PostgreSQL down: %v", err)
	}
	res, err := st.Query(ctx)
	if err != nil {
		t.Fatalf("historical, PostgreSQL down: %v", err)
	}
	if res.Rows[0][0] != int64(6) || res.Rows[0][0] != want.Rows[0][0] {
		t.Errorf("historical: %v rows, before the database went %v; want the 6 below W", res.Rows[0][0], want.Rows[0][0])
	}
	tr := res.Tables[0]
	if res.Mode != ReadHistorical || tr.Mode != ReadHistorical || !tr.HasUnseen || !tr.Unseen.From.Equal(dayN(3)) ||
		!tr.Unseen.To.IsZero() || len(tr.Tiers) != 1 || tr.Tiers[0] != "cold" {
		t.Errorf("historical header: mode %v, table %+v; want the rows from W unseen, cold alone", res.Mode, tr)
	}
	restore()
	if res := mustQuery(t, s, `SELECT count(*) FROM readings`); res.Rows[0][0] != int64(12) {
		t.Errorf("with the database back, every row: %v", res.Rows[0][0])
	}
}

// TestReadOperational: with the warehouse away, an operational read
// answers the rows at or above W from PostgreSQL alone, and says it did
// not see the rows below the hot floor; the same statement read as usual
// fails, so the operational read did not touch the cold tier.
func TestReadOperational(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	s := e.open(t, Options{})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(6)); err != nil {
		t.Fatal(err)
	}
	for d := range 6 {
		mustWrite(t, s, []Reading{qh(1, d, 4, "A", 1, 1000), qh(2, d, 5, "B", 1, 2000)})
	}
	if out, err := s.Archive(ctx, "power", dayN(5)); err != nil || !out.Watermark.Equal(dayN(3)) {
		t.Fatalf("archive: %+v, %v", out, err)
	}
	unreachableWarehouse(t, e.dir)
	const sql = `SELECT count(*), min("from") FROM readings`
	if _, err := s.Query(ctx, "power", sql); !errors.Is(err, ErrColdUnreachable) {
		t.Fatalf("a query of both tiers with the warehouse away: %v", err)
	}
	st, err := s.Prepare(ctx, sql, StatementOptions{Table: "power", Read: ReadOptions{Mode: ReadOperational}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := st.Query(ctx)
	if err != nil {
		t.Fatalf("operational, the warehouse away: %v", err)
	}
	if res.Rows[0][0] != int64(6) {
		t.Errorf("operational: %v rows; want the 6 at or above W", res.Rows[0][0])
	}
	tr := res.Tables[0]
	if res.Mode != ReadOperational || !tr.HasUnseen || !tr.Unseen.To.Equal(dayN(3)) || len(tr.Tiers) != 1 || tr.Tiers[0] != "hot" {
		t.Errorf("operational header: mode %v, table %+v; want the rows below the floor unseen, hot alone", res.Mode, tr)
	}
}

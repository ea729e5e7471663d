package store

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/meterstore/meterstore/internal/pgtest"
)

// statements counts the round trips of statements a pool's connections
// make: a statement, or a batch of them.
type statements struct{ n atomic.Int64 }

func (c *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *statements) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *statements) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (c *statements) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// TestTypedHotReadOneStatement: once the archival ledger exists, a typed
// read of hot days is one round trip to PostgreSQL, counted on the
// store's pool and the catalog log's both: the ledger's watermark and the
// log's head are read in the statement, the cold plan made in the state
// an earlier read loaded. Until a read has seen the ledger, the statement
// reads whether it exists instead, in the same round trip; after a
// commit, the read that finds it loads afresh.
func TestTypedHotReadOneStatement(t *testing.T) {
	ctx := t.Context()
	cfg, err := pgxpool.ParseConfig(pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	var count statements
	cfg.ConnConfig.Tracer = &count
	s := envOf(t, cfg, t.TempDir(), LogPostgres).open(t, Options{})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(6)); err != nil {
		t.Fatal(err)
	}
	for d := range 6 {
		mustWrite(t, s, []Reading{qh(1, d, 4, "A", 1, 1000), qh(1, d, 5, "A", 1, 1001)})
	}
	q := SeriesQuery{MaLo: malo(1), OBIS: "1-1:1.29.0", From: dayN(4), To: dayN(5)}
	read := func(what string, want int64) {
		t.Helper()
		before := count.n.Load()
		rs, err := s.SeriesReadings(ctx, "power", q)
		if err != nil || len(rs) != 2 {
			t.Fatalf("%s: %d readings, %v", what, len(rs), err)
		}
		if n := count.n.Load() - before; want >= 0 && n != want {
			t.Errorf("%s: %d statements, want %d", what, n, want)
		}
	}
	read("warm-up", -1)       // layouts and the like: read once
	read("warm-up again", -1) // where the log is: asked once
	read("no ledger yet", 1)
	read("still no ledger", 1)
	if out, err := s.Archive(ctx, "power", dayN(5)); err != nil || !out.Watermark.Equal(dayN(3)) {
		t.Fatalf("archive: %+v, %v", out, err)
	}
	read("after the archival", -1) // finds the ledger, and the commit
	if !s.ledgerSeen.Load() {
		t.Error("after the archival, the read did not see the ledger: its watermark vets no W")
	}
	read("again", 1)
	read("and again", 1)
}

package store

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// TestTypedReadsOwnConnections: with ReadPool set, a typed read of hot
// days answers while something else holds every connection of the
// store's pool, as ingest's COPYs do, before the first archival and
// after it, and runs no statement on that pool. Without ReadPool the
// read would wait for the held connection until its deadline.
func TestTypedReadsOwnConnections(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	open := func(max int32, tracer *statements) *pgxpool.Pool {
		cfg := e.pool.Config().Copy()
		cfg.MaxConns = max
		if tracer != nil {
			cfg.ConnConfig.Tracer = tracer
		}
		p, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		return p
	}
	var writes statements
	pool, reads := open(4, &writes), open(2, nil)
	s, err := Open(ctx, Options{Pool: pool, ReadPool: reads, Catalog: e.cat, Tables: []Table{power()}, Archive: testArchive,
		Query: QueryOptions{CacheDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreatePartitions(ctx, dayN(0), dayN(6)); err != nil {
		t.Fatal(err)
	}
	for d := range 6 {
		mustWrite(t, s, []Reading{qh(1, d, 4, "A", 1, 1000), qh(1, d, 5, "A", 1, 1001)})
	}
	q := SeriesQuery{MaLo: malo(1), OBIS: "1-1:1.29.0", From: dayN(4), To: dayN(5)}
	read := func(what string) {
		t.Helper()
		if _, err := s.SeriesReadings(ctx, "power", q); err != nil { // warm: layouts and the like
			t.Fatalf("%s, warm-up: %v", what, err)
		}
		for range pool.Config().MaxConns {
			held, err := pool.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer held.Release()
		}
		before := writes.n.Load()
		// The deadline only bounds the failure: a read waiting for the
		// held connection would wait for ever.
		rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		for range 3 {
			rs, err := s.SeriesReadings(rctx, "power", q)
			if err != nil || len(rs) != 2 {
				t.Fatalf("%s: %d readings, %v", what, len(rs), err)
			}
		}
		if n := writes.n.Load() - before; n != 0 {
			t.Errorf("%s: %d statements on the store's pool, want 0", what, n)
		}
	}
	read("no ledger yet")
	if out, err := s.Archive(ctx, "power", dayN(5)); err != nil || !out.Watermark.Equal(dayN(3)) {
		t.Fatalf("archive: %+v, %v", out, err)
	}
	read("after the archival")
}

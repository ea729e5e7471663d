package store

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meterstore/meterstore/internal/query"
)

// tripConn counts the writes of a connection to PostgreSQL: the client
// writes a request at once and waits for its answer before the next, so
// each write is a round trip.
type tripConn struct {
	net.Conn
	n *atomic.Int64
}

func (c tripConn) Write(b []byte) (int, error) {
	c.n.Add(1)
	return c.Conn.Write(b)
}

// TestSQLReadRoundTrips: an SQL statement of hot days makes one
// PostgreSQL round trip less once the archival ledger exists, its
// watermark read in the statement that takes the hot snapshot rather
// than before the catalog's log head; the same statement with that
// folding off (the old order: the ledger, the log head, the snapshot)
// makes the one more. Every pool counts: the store's and the catalog
// log's. One thread: the hot snapshot's cursors share one connection, so
// that no other joins it as timing has it.
func TestSQLReadRoundTrips(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	var trips atomic.Int64
	cfg := e.pool.Config().Copy()
	dial := cfg.ConnConfig.DialFunc
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return tripConn{Conn: c, n: &trips}, nil
	}
	te := envOf(t, cfg, e.dir, LogPostgres)
	s, err := Open(ctx, Options{Pool: te.pool, Catalog: te.cat, Tables: []Table{power()}, Archive: testArchive,
		Query: QueryOptions{CacheDir: t.TempDir(), Threads: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreatePartitions(ctx, dayN(0), dayN(6)); err != nil {
		t.Fatal(err)
	}
	for d := range 6 {
		mustWrite(t, s, []Reading{qh(1, d, 4, "A", 1, 1000), qh(1, d, 5, "A", 1, 1001)})
	}
	if out, err := s.Archive(ctx, "power", dayN(5)); err != nil || !out.Watermark.Equal(dayN(3)) {
		t.Fatalf("archive: %+v, %v", out, err)
	}
	// The store's engine with and without the folding: the same source
	// otherwise.
	tb, ct, _, err := s.opened(ctx, "power")
	if err != nil {
		t.Fatal(err)
	}
	engine := func(v *query.Vouch) *query.Engine {
		return soleEngine(t, tb.decl, &query.TableSource{HotTier: hotTier{s.hot}, ColdTier: s.cold, Table: tb.decl, ColdTable: ct,
			VetWatermark: func(ctx context.Context, read func(context.Context) (time.Time, bool, error)) (time.Time, bool, error) {
				return s.arch.VetWatermark(ctx, "power", read)
			}, Vouch: v}, query.Settings{Threads: 1, CacheDir: t.TempDir()})
	}
	folding, unfolded := engine(s.vouch("power")), engine(nil)
	hotDays := `SELECT count(*) FROM readings WHERE "from" >= ` + ts(dayN(4))
	read := func(e *query.Engine, what string) int64 {
		t.Helper()
		before := trips.Load()
		st, err := e.Prepare(ctx, hotDays, query.PrepareOptions{Table: "power"})
		var res *query.Result
		if err == nil {
			res, err = st.Query(ctx)
		}
		if err != nil || res.Rows[0][0] != int64(4) || !slices.Equal(res.Tiers, []string{"hot"}) {
			t.Fatalf("%s: %+v, %v", what, res, err)
		}
		return trips.Load() - before
	}
	// Warm-up: layouts, the ledger's existence and the like, once.
	read(folding, "warm-up")
	read(unfolded, "warm-up")
	var got [2][]int64
	for i := range 4 { // in turns
		got[i%2] = append(got[i%2], read([]*query.Engine{folding, unfolded}[i%2], fmt.Sprint("read ", i)))
	}
	t.Logf("round trips of a statement of hot days: folded %v, unfolded %v", got[0], got[1])
	for i := range got[0] {
		if got[0][i] != got[1][i]-1 {
			t.Errorf("round trips: folded %v, unfolded %v; want one less folded", got[0], got[1])
		}
	}
	// The store's own statements fold, once warm.
	var n int64
	for range 2 {
		before := trips.Load()
		if res, err := s.Query(ctx, "power", hotDays); err != nil || res.Rows[0][0] != int64(4) {
			t.Fatalf("store: %+v, %v", res, err)
		}
		n = trips.Load() - before
	}
	if n != got[0][0] {
		t.Errorf("the store's statement: %d round trips, want %d as folded", n, got[0][0])
	}
}

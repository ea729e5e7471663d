package store

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/query"
	"github.com/meterstore/meterstore/series"
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

// tripStore opens a store whose PostgreSQL round trips trips counts,
// both pools' (the store's and the catalog log's), with two readings a
// day of days 0 to 5 and W at day 3.
func tripStore(t *testing.T) (*Store, *atomic.Int64) {
	ctx := t.Context()
	e := newEnv(t)
	trips := &atomic.Int64{}
	cfg := e.pool.Config().Copy()
	dial := cfg.ConnConfig.DialFunc
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return tripConn{Conn: c, n: trips}, nil
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
	return s, trips
}

// tripSource returns the source of s's table power as the store's
// engine reads it, with its watermark vetted, folded by v if set, and
// without kept cold state or the record of altered files.
func tripSource(t *testing.T, s *Store, v *query.Vouch) (*query.TableSource, *series.Table) {
	tb, ct, _, err := s.opened(t.Context(), "power")
	if err != nil {
		t.Fatal(err)
	}
	return &query.TableSource{HotTier: hotTier{s.hot}, ColdTier: s.cold, Table: tb.decl, ColdTable: ct,
		VetWatermark: func(ctx context.Context, read func(context.Context) (time.Time, bool, error)) (time.Time, bool, error) {
			return s.arch.VetWatermark(ctx, "power", read)
		}, Vouch: v}, tb.decl
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
	s, trips := tripStore(t)
	// The store's engine with and without the folding: the same source
	// otherwise.
	engine := func(v *query.Vouch) *query.Engine {
		src, decl := tripSource(t, s, v)
		return soleEngine(t, decl, src, query.Settings{Threads: 1, CacheDir: t.TempDir()})
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

// TestSQLColdReadKeptState: a statement of cold days plans in the cold
// state kept from the one before, vouched for by one statement reading
// the log's head and the ledger's watermark, a round trip less than the
// vetted load (the ledger, then the log) the same statement makes
// without it. A late correction below W moves the head: the next
// statement finds the kept state out of date, loads afresh and sees the
// correction, and the one after plans in the new state again.
func TestSQLColdReadKeptState(t *testing.T) {
	ctx := t.Context()
	s, trips := tripStore(t)
	engine := func(kept bool) *query.Engine {
		src, decl := tripSource(t, s, s.vouch("power"))
		if kept {
			src.Kept = func(ctx context.Context) (cold.Loaded, bool) { return s.keptCold(ctx, src.ColdTable) }
			src.Keep = func(l cold.Loaded) { s.warm.put("power", l) }
		}
		return soleEngine(t, decl, src, query.Settings{Threads: 1, CacheDir: t.TempDir()})
	}
	withKept, without := engine(true), engine(false)
	coldDays := `SELECT CAST(sum(value) AS VARCHAR) FROM readings WHERE "from" < ` + ts(dayN(3))
	read := func(e *query.Engine, what, sum string) int64 {
		t.Helper()
		before := trips.Load()
		st, err := e.Prepare(ctx, coldDays, query.PrepareOptions{Table: "power"})
		var res *query.Result
		if err == nil {
			res, err = st.Query(ctx)
		}
		if err != nil || res.Rows[0][0] != sum || !slices.Equal(res.Tiers, []string{"cold"}) {
			t.Fatalf("%s: %+v, %v; want the sum %s from the cold tier", what, res, err, sum)
		}
		return trips.Load() - before
	}
	// Warm-up: W seen, layouts, the ledger's existence, the state kept.
	for range 2 {
		read(withKept, "warm-up", "0.006003")
		read(without, "warm-up", "0.006003")
	}
	var got [2][]int64
	for i := range 4 { // in turns
		got[i%2] = append(got[i%2], read([]*query.Engine{withKept, without}[i%2], fmt.Sprint("read ", i), "0.006003"))
	}
	t.Logf("round trips of a statement of cold days: kept %v, loaded %v", got[0], got[1])
	for i := range got[0] {
		if got[0][i] != got[1][i]-1 {
			t.Errorf("round trips: kept %v, loaded %v; want one less kept", got[0], got[1])
		}
	}
	// A late correction of day 1 commits below W.
	mustWrite(t, s, []Reading{qh(1, 1, 4, "A", 2, 2000)})
	after := read(withKept, "after a late correction", "0.007003")
	again := read(withKept, "again after a late correction", "0.007003")
	if want := got[0][0] + got[1][0]; after != want || again != got[0][0] {
		t.Errorf("round trips after the correction: %d then %d; want %d (the kept state refused, loaded afresh) then %d (kept)", after, again, want, got[0][0])
	}
}

package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	icetable "github.com/apache/iceberg-go/table"
)

// countingCatalog is the real catalog, counting the tables it loads.
type countingCatalog struct {
	icecatalog.Catalog
	loads atomic.Int64
}

func (c *countingCatalog) LoadTable(ctx context.Context, id icetable.Identifier) (*icetable.Table, error) {
	c.loads.Add(1)
	return c.Catalog.LoadTable(ctx, id)
}

// TestWriteReadsNoColdMetadataPerBatch: once a store has read a table's
// watermark, writes at or above it load no cold metadata; a late
// correction does, and the partitions of new days are made on the way.
func TestWriteReadsNoColdMetadataPerBatch(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	cat := &countingCatalog{Catalog: e.cat}
	s, err := Open(ctx, Options{Pool: e.pool, Catalog: cat, Tables: []Table{power()}, Archive: testArchive,
		Query: QueryOptions{CacheDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	a := acked{}
	for d := range 3 {
		a.write(t, s, "power", degradeBatch(d, d, false))
	}
	if out, err := s.Archive(ctx, "power", dayN(3)); err != nil || !out.Watermark.Equal(dayN(1)) {
		t.Fatalf("archive: %+v, %v", out, err)
	}
	before := cat.loads.Load()
	for b := range 10 {
		a.write(t, s, "power", degradeBatch(10+b, 1+b%5, false))
	}
	if n := cat.loads.Load() - before; n != 0 {
		t.Errorf("10 hot batches loaded the cold table %d times; want none", n)
	}
	a.write(t, s, "power", degradeBatch(30, 2, true))
	if n := cat.loads.Load() - before; n == 0 {
		t.Errorf("a late correction loaded no cold metadata")
	}
	a.check(t, s, "power")
}

// unreachableWarehouse makes the file warehouse at dir unreachable, for
// root too, which chmod would not stop: a file takes the directory's
// place, so that nothing can quietly recreate it. The two are exchanged
// in one step: an operation running meanwhile finds a file where a
// directory was, never nothing (a file gone from a warehouse that is
// there is evidence of loss, not of an outage). The returned function
// brings it back; it runs at cleanup if the test does not.
func unreachableWarehouse(t *testing.T, dir string) (restore func()) {
	t.Helper()
	away := dir + ".away"
	if err := os.WriteFile(away, []byte("the warehouse is away"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := exchange(dir, away); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	restore = func() {
		once.Do(func() {
			if err := exchange(dir, away); err != nil {
				t.Error(err)
			}
			if err := os.Remove(away); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(restore)
	return restore
}

// degradeBatch returns batch b: readings of day d of meters unique to b,
// and, if late is set, a correction of day 0 below the watermark.
func degradeBatch(b, d int, late bool) []Reading {
	rs := []Reading{qh(1000+b, d, b%96, "A", 1, int64(b)), qh(1000+b, d, (b+1)%96, "A", 1, int64(b)+1)}
	if late {
		rs = append(rs, qh(1000+b, 0, b%96, "A", 2, int64(b)+2))
	}
	return rs
}

// TestColdUnreachableIngestAndArchival is the degrade test of the cold
// tier, on either catalog log. While the file warehouse is away, hot
// ingest goes on without reading Iceberg metadata, creating the partitions
// of new days, concurrently with archival attempts; a batch with a late
// correction, and every archival, fails retryably naming the cold tier.
// The warehouse also goes away while archival runs, at whatever step it
// has reached. Back again, the failed batches are retried as a client
// would, archival completes, every acknowledged reading is stored exactly
// once, and PostgreSQL holds no row below the final watermark (invariant
// 1), read straight from the partitions.
func TestColdUnreachableIngestAndArchival(t *testing.T) {
	for _, log := range []string{LogPostgres, LogObjectStore} {
		t.Run(log, func(t *testing.T) { coldUnreachable(t, log) })
	}
}

func coldUnreachable(t *testing.T, log string) {
	ctx := t.Context()
	e := newEnvOn(t, log)
	s := e.open(t, Options{})
	a := acked{}
	// No partition is made ahead: the writes create them.
	for d := range 4 {
		a.write(t, s, "power", degradeBatch(d, d, false))
	}
	if out, err := s.Archive(ctx, "power", dayN(4)); err != nil || !out.Watermark.Equal(dayN(2)) {
		t.Fatalf("archive: %+v, %v", out, err)
	}

	var mu sync.Mutex
	var failed [][]Reading // retryable failures, retried at the end
	ingest := func(first, n int, wantAll bool) {
		for b := first; b < first+n; b++ {
			rs := degradeBatch(b, 2+b%6, b%5 == 0) // days 2 to 7
			_, err := s.Write(ctx, "power", rs)
			switch {
			case err == nil:
				mu.Lock()
				a["power"] = append(a["power"], rs...)
				mu.Unlock()
			case !IsRetryable(err):
				t.Errorf("batch %d: %v is not retryable", b, err)
			case b%5 == 0 && wantAll && !errors.Is(err, ErrColdUnreachable):
				t.Errorf("batch %d with a late correction: %v; want ErrColdUnreachable", b, err)
			case b%5 != 0 && wantAll:
				t.Errorf("hot batch %d with the warehouse away: %v", b, err)
			default:
				mu.Lock()
				failed = append(failed, rs)
				mu.Unlock()
			}
		}
	}
	archive := func(now time.Time, attempts int, wantFail bool) {
		for range attempts {
			out, err := s.Archive(ctx, "power", now)
			switch {
			case err != nil && !IsRetryable(err):
				t.Errorf("archival: %v is not retryable", err)
			case wantFail && (err == nil || !errors.Is(err, ErrColdUnreachable) || out.Status != ArchiveFailed):
				t.Errorf("archival with the warehouse away: %+v, %v; want failed, ErrColdUnreachable", out, err)
			case err != nil && !strings.Contains(err.Error(), "cold tier is unreachable"):
				t.Errorf("archival error %v does not name the cold tier", err)
			}
		}
	}

	// The warehouse away from the start: ingest and archival at once.
	restore := unreachableWarehouse(t, e.dir)
	var wg sync.WaitGroup
	wg.Go(func() { ingest(10, 40, true) })
	wg.Go(func() { archive(dayN(7), 5, true) })
	wg.Wait()
	if sts := s.Status(ctx, dayN(7)); sts[0].Healthy || sts[0].Err == nil || !strings.Contains(sts[0].Err.Error(), "power") {
		t.Errorf("status with the warehouse away: %+v", sts[0])
	}
	restore()

	// The warehouse goes away while archival runs, at whatever step.
	wg.Go(func() { ingest(100, 40, false) })
	wg.Go(func() { archive(dayN(7), 3, false) })
	time.Sleep(20 * time.Millisecond)
	restore = unreachableWarehouse(t, e.dir)
	wg.Wait()
	restore()

	// Back: the next cycle completes what the interrupted one detached;
	// what failed is retried, as a client would, and archival goes on.
	if out, err := s.Archive(ctx, "power", dayN(7)); err != nil || len(out.Violations) > 0 {
		t.Fatalf("archival once the warehouse is back: %+v, %v", out, err)
	}
	for _, rs := range failed {
		var err error
		for attempt := 0; attempt < 20; attempt++ {
			if _, err = s.Write(ctx, "power", rs); err == nil || !IsRetryable(err) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("retried batch: %v", err)
		}
		a["power"] = append(a["power"], rs...)
	}
	var w time.Time
	for range 10 {
		out, err := s.Archive(ctx, "power", dayN(9))
		if err != nil || len(out.Violations) > 0 {
			t.Fatalf("archival once the warehouse is back: %+v, %v", out, err)
		}
		w = out.Watermark
		if out.Status == ArchiveNothingDue && len(out.Dropped) == 0 {
			break
		}
	}
	if !w.Equal(dayN(7)) {
		t.Fatalf("W = %v; want day 7", w)
	}
	a.check(t, s, "power")

	// Invariant 1, read from PostgreSQL itself: no attached partition and
	// no row below W.
	var below, parts int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM meterstore.power WHERE "from" < $1`, w).Scan(&below); err != nil {
		t.Fatal(err)
	}
	err := e.pool.QueryRow(ctx, `SELECT count(*) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'meterstore.power'::regclass AND c.relname < $1`, fmt.Sprintf("power_p%s", w.Format("20060102"))).Scan(&parts)
	if err != nil {
		t.Fatal(err)
	}
	if below != 0 || parts != 0 {
		t.Errorf("PostgreSQL holds %d rows and %d attached partitions below W %v", below, parts, w)
	}
}

// movedAway moves the file warehouse at dir away and leaves an empty
// directory in its place, as an unmounted volume or a directory moved by
// hand looks, and returns how to bring it back.
func movedAway(t *testing.T, dir string) (restore func()) {
	t.Helper()
	away := dir + ".away"
	if err := os.Rename(dir, away); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(away, dir); err != nil {
			t.Fatal(err)
		}
	}
}

// TestColdUnreachableAtOpen: a store that opens while the warehouse is
// away, on either catalog log, opens its tables on PostgreSQL alone. It
// creates no table and no namespace in the empty warehouse (the archival
// ledger says the table was archived into); it ingests above the watermark
// the ledger recorded and answers operational reads; a late correction, a
// read of both tiers and archival fail retryably naming the cold tier; its
// status is unhealthy with the ledger's watermark, marked as such. Once the
// warehouse is back the store takes it up within coldRetry, without a
// restart: archival and reads of both tiers work, and every acknowledged
// reading is there once.
func TestColdUnreachableAtOpen(t *testing.T) {
	for _, log := range []string{LogPostgres, LogObjectStore} {
		t.Run(log, func(t *testing.T) { coldUnreachableAtOpen(t, log) })
	}
}

func coldUnreachableAtOpen(t *testing.T, log string) {
	ctx := t.Context()
	e := newEnvOn(t, log)
	s := e.open(t, Options{})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(12)); err != nil {
		t.Fatal(err)
	}
	a := acked{}
	for d := range 4 {
		a.write(t, s, "power", degradeBatch(d, d, false))
	}
	if out, err := s.Archive(ctx, "power", dayN(4)); err != nil || !out.Watermark.Equal(dayN(2)) {
		t.Fatalf("archive: %+v, %v", out, err)
	}

	restore := movedAway(t, e.dir)
	var wall atomic.Int64
	wall.Store(time.Now().UnixNano())
	clock := func() time.Time { return time.Unix(0, wall.Load()) }
	away := e.another(t).open(t, Options{Now: NowOptions{WallClock: clock}})

	for b := 10; b < 14; b++ {
		a.write(t, away, "power", degradeBatch(b, 2+b%4, false))
	}
	if _, err := away.Write(ctx, "power", degradeBatch(20, 3, true)); !IsRetryable(err) || !errors.Is(err, ErrColdUnreachable) {
		t.Errorf("a late correction with the warehouse away: %v; want retryable, ErrColdUnreachable", err)
	}
	res, err := away.QueryAt(ctx, "power", `SELECT count(*) FROM readings`, ReadOptions{Mode: ReadOperational})
	if err != nil || res.Rows[0][0] != int64(4+8) {
		t.Errorf("an operational read with the warehouse away: %v, %v; want the 12 hot readings", res, err)
	}
	if res, err := away.Query(ctx, "power", `SELECT count(*) FROM readings`); err == nil || !IsRetryable(err) || !errors.Is(err, ErrColdUnreachable) {
		t.Errorf("a read of both tiers with the warehouse away: %v, %v; want retryable, ErrColdUnreachable", res, err)
	}
	if out, err := away.Archive(ctx, "power", dayN(6)); err == nil || !IsRetryable(err) || !errors.Is(err, ErrColdUnreachable) {
		t.Errorf("archival with the warehouse away: %+v, %v; want retryable, ErrColdUnreachable", out, err)
	}
	st := away.Status(ctx, dayN(6))[0]
	if st.Healthy || !st.WatermarkFromLedger || !st.Watermark.Equal(dayN(2)) || st.Err == nil || !strings.Contains(st.Err.Error(), "cold tier") {
		t.Errorf("status with the warehouse away: %+v", st)
	}
	if files := warehouseFiles(t, e.dir, ""); len(files) > 0 {
		t.Errorf("the store wrote into the empty warehouse: %v", files)
	}

	restore()
	wall.Add(int64(coldRetry))
	if st := away.Status(ctx, dayN(6))[0]; !st.Healthy || st.WatermarkFromLedger {
		t.Errorf("status once the warehouse is back: %+v", st)
	}
	if out, err := away.Archive(ctx, "power", dayN(6)); err != nil || !out.Watermark.Equal(dayN(4)) {
		t.Errorf("archival once the warehouse is back: %+v, %v", out, err)
	}
	a.write(t, away, "power", degradeBatch(20, 3, true))
	a.check(t, away, "power")
}

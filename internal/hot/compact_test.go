package hot

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/series"
)

// compactMeters is how many meters the compaction tests write a day.
const compactMeters = 30

// writeDays writes compactMeters meters on each of the days before day
// and on day itself, the former in partitions it creates.
func writeDays(t *testing.T, h *Tier, tab *series.Table, before int) {
	t.Helper()
	ctx := context.Background()
	if _, err := h.CreatePartitions(ctx, tab, day.AddDate(0, 0, -before), day.AddDate(0, 0, -1)); err != nil {
		t.Fatal(err)
	}
	for d := -before; d <= 0; d++ {
		var rows []series.Reading
		for i := range compactMeters {
			for _, r := range meterDay(i, 100) {
				r.From, r.To = r.From.AddDate(0, 0, d), r.To.AddDate(0, 0, d)
				rows = append(rows, r)
			}
		}
		mustWrite(t, h, tab, rows)
	}
}

// heapSizes returns the heap bytes of each of names that exists.
func heapSizes(t *testing.T, pool *pgxpool.Pool, names []string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, n := range names {
		var size *int64
		if err := pool.QueryRow(context.Background(), `SELECT pg_relation_size(to_regclass('meterstore.'||$1))`, n).Scan(&size); err != nil {
			t.Fatal(err)
		}
		if size != nil {
			out[n] = *size
		}
	}
	return out
}

// TestCompact: after two of three days' partitions drop, Compact rewrites
// the ownership relation (and whatever else is mostly free space) to a
// heap of its live rows; the kept day's readings, their recorded owner
// and the day sums are what they were.
func TestCompact(t *testing.T) {
	for _, lay := range dictLayouts {
		t.Run(lay.String(), func(t *testing.T) { testCompact(t, lay) })
	}
}

func testCompact(t *testing.T, lay layout) {
	h, pool := dictTier(t, lay)
	h.compactFloor = 2 << 13 // two pages: a one-page heap is left alone
	tab := readTable(t, h, "agg", series.IntegrityStatement)
	ctx := context.Background()
	rows := readRows(compactMeters, 3, 100)
	mustWrite(t, h, tab, rows)
	names := companions(tab, series.IntegrityStatement, lay)
	sameDays(t, h, tab, series.Range{}) // stores the day sums of every day
	for d := range 2 {
		if err := h.Detach(ctx, tab, day.AddDate(0, 0, d)); err != nil {
			t.Fatal(err)
		}
		if err := h.Drop(ctx, tab, day.AddDate(0, 0, d)); err != nil {
			t.Fatal(err)
		}
	}
	kept := len(scanAll(t, h, tab))
	if _, err := pool.Exec(ctx, `VACUUM meterstore.`+ownersName(tab)); err != nil {
		t.Fatal(err)
	}
	before := heapSizes(t, pool, names)

	done, err := h.Compact(ctx, tab)
	if err != nil {
		t.Fatal(err)
	}
	after := heapSizes(t, pool, names)
	t.Logf("compacted %v: heap bytes %v before, %v after", done, before, after)
	if !slices.Contains(done, ownersName(tab)) {
		t.Errorf("compacted %v, not the ownership relation %s (heap %d bytes)", done, ownersName(tab), before[ownersName(tab)])
	}
	for _, n := range done {
		if after[n]*3/2 > before[n] {
			t.Errorf("%s: heap %d bytes after the rewrite, %d before: want at most two thirds", n, after[n], before[n])
		}
	}
	if again, err := h.Compact(ctx, tab); err != nil || len(again) != 0 {
		t.Errorf("compacted again: %v (%v), want nothing", again, err)
	}
	if got := len(scanAll(t, h, tab)); got != kept {
		t.Errorf("%d readings after the rewrite, want %d", got, kept)
	}
	sameDays(t, h, tab, series.Range{})
	other := rows[len(rows)-1]
	other.Version, other.VersionScope = other.Version+1, "9900000000010:2026-03"
	refused(t, h, tab, []series.Reading{other}, series.IntegrityViolation, 0)
}

// TestCompactDeferred: a companion another transaction holds a lock on is
// left as it is, within the lock wait, and rewritten by the next call.
func TestCompactDeferred(t *testing.T) {
	h, pool := newTier(t, Options{})
	h.compactFloor = 2 << 13 // two pages: a one-page heap is left alone
	tab := lastgang("lastgang")
	declare(t, h, tab)
	ctx := context.Background()
	writeDays(t, h, tab, 2)
	for d := -2; d <= -1; d++ {
		if err := h.Detach(ctx, tab, day.AddDate(0, 0, d)); err != nil {
			t.Fatal(err)
		}
		if err := h.Drop(ctx, tab, day.AddDate(0, 0, d)); err != nil {
			t.Fatal(err)
		}
	}
	owners := ownersName(tab)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT count(*) FROM meterstore.`+owners); err != nil {
		t.Fatal(err)
	}
	done, err := h.Compact(ctx, tab)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(done, owners) {
		t.Fatalf("compacted %v while a transaction reads %s", done, owners)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if done, err = h.Compact(ctx, tab); err != nil || !slices.Contains(done, owners) {
		t.Fatalf("compacted %v (%v) once the lock was free, want %s among them", done, err, owners)
	}
}

// TestCompactConcurrentWrites rewrites the companions again and again
// while writers add meters: every acknowledged reading is stored, and
// the ownership relation still refuses a second operator.
func TestCompactConcurrentWrites(t *testing.T) {
	h, pool := newTier(t, Options{})
	tab := lastgang("lastgang")
	declare(t, h, tab)
	ctx := context.Background()
	info, _, err := h.declared(ctx, pool, tab)
	if err != nil {
		t.Fatal(err)
	}
	names := companions(tab, info.integrity, info.layout)

	const writers, batches = 2, 15
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				if _, err := h.Write(ctx, tab, meterDay(1000+w*batches+b, 100)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	stop := make(chan struct{})
	var rewrites int
	var rewriteErr error
	rewrote := make(chan struct{})
	go func() {
		defer close(rewrote)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_, _, err := h.vacuumFull(ctx, h.ident(names[i%len(names)]))
			var pgErr *pgconn.PgError
			switch {
			case errors.As(err, &pgErr) && pgErr.Code == "55P03":
			case err != nil:
				rewriteErr = err
				return
			default:
				rewrites++
			}
			time.Sleep(time.Millisecond)
		}
	}()
	wg.Wait()
	close(stop)
	<-rewrote
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if rewriteErr != nil {
		t.Fatal(rewriteErr)
	}
	if rewrites == 0 {
		t.Fatal("no rewrite while the writers ran")
	}
	if got := len(scanAll(t, h, tab)); got != writers*batches*96 {
		t.Errorf("%d readings after %d rewrites, want %d", got, rewrites, writers*batches*96)
	}
	c := sqlClient{pool: pool, rel: "meterstore.lastgang"}
	if err := c.insert(ctx, pool, malo(1000), "kWh", 4, 101, "9900000000010", 1); !refusedAs(err, "23P01") {
		t.Errorf("a second operator after %d rewrites: %v", rewrites, err)
	}
}

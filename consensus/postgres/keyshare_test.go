package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/consensus"
	"github.com/meterstore/meterstore/consensus/consensustest"
	"github.com/meterstore/meterstore/internal/pgtest"
)

// TestCaSKeyShareDoesNotBlock pauses a compare-and-set on expected 3
// after it locked its predecessor row FOR KEY SHARE, as every CaS does
// between its snapshot and its insert. A second CaS on the same expected,
// through a log whose sessions give up on any lock after 1 s, does not
// wait for it: it commits entry 4. The paused one, released, finds 4
// taken and reports a mismatch; the log stays contiguous. (A lock that
// conflicts with itself, FOR UPDATE, would make the second wait for the
// first and give up.)
func TestCaSKeyShareDoesNotBlock(t *testing.T) {
	url := pgtest.NewDB(t)
	l := open(t, url, Options{})
	for i := range 4 {
		consensustest.Append(t, l, "s", int64(i)-1, "x")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["lock_timeout"] = "1s"
	impatient, err := Open(t.Context(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer impatient.Close()

	s := newSchedule(t, l, url)
	paused := pausedLog{Log: l, sql: casVariant(l.table, true)}
	done := make(chan outcome, 1)
	go func() {
		res, err := paused.CompareAndSet(context.Background(), "s", 3, []byte("paused"))
		done <- outcome{consensustest.Output{Result: res}, err}
	}()
	s.waitFor("the paused CaS", pausedWaiting)
	start := time.Now()
	res, err := impatient.CompareAndSet(t.Context(), "s", 3, []byte("second"))
	keyShare := time.Since(start)
	if err != nil || res != consensus.Committed {
		t.Errorf("a CaS beside one in flight on the same predecessor: %v, %v; want committed without waiting", res, err)
	}
	// The fixture's check: the paused CaS does hold its predecessor, so a
	// CaS that locks it FOR UPDATE waits for it, up to its lock timeout.
	update := variantLog{Log: impatient, cas: predecessorLockVariant(l.table, "FOR UPDATE")}
	start = time.Now()
	_, err = update.CompareAndSet(t.Context(), "s", 3, []byte("update"))
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "55P03" {
		t.Errorf("a CaS locking the predecessor FOR UPDATE beside the paused one: %v; want it to wait until its lock timeout", err)
	}
	t.Logf("beside a CaS in flight on the same predecessor: the log's CaS (FOR KEY SHARE) committed in %v; one locking it FOR UPDATE waited %v, until its lock timeout",
		keyShare.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	s.release()
	o := <-done
	if o.err != nil || o.out.Result != consensus.ExpectationMismatch {
		t.Errorf("the paused CaS after the other committed: %v, %v; want a mismatch", o.out.Result, o.err)
	}
	if err := contiguous(t.Context(), l, "s"); err != nil {
		t.Fatal(err)
	}
	if e, ok, err := l.Head(t.Context(), "s"); err != nil || !ok || e.SeqNo != 4 || string(e.Data) != "second" {
		t.Fatalf("head %+v, %v, %v; want entry 4 of the second CaS", e, ok, err)
	}
}

// TestShardWithoutMarker reads and extends a shard that a version from
// before the marker row wrote, entries without the row at -1: Head, Scan,
// CompareAndSet and Truncate work on it as on any shard, and a stale
// first write is a mismatch, also once entry 0 is truncated.
func TestShardWithoutMarker(t *testing.T) {
	ctx := t.Context()
	l := open(t, pgtest.NewDB(t), Options{})
	for i := range 4 {
		if _, err := l.pool.Exec(ctx, `INSERT INTO `+l.table+` (shard, seqno, data) VALUES ('old', $1, $2)`, i, fmt.Sprintf("e%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if e, ok, err := l.Head(ctx, "old"); err != nil || !ok || e.SeqNo != 3 || string(e.Data) != "e3" {
		t.Fatalf("head of a shard without marker: %+v, %v, %v", e, ok, err)
	}
	if es, err := l.Scan(ctx, "old", 0, 10); err != nil || len(es) != 4 || es[0].SeqNo != 0 {
		t.Fatalf("scan of a shard without marker: %+v, %v", es, err)
	}
	if res, err := l.CompareAndSet(ctx, "old", 3, []byte("e4")); err != nil || res != consensus.Committed {
		t.Fatalf("append to a shard without marker: %v, %v", res, err)
	}
	if res, err := l.CompareAndSet(ctx, "old", 2, []byte("stale")); err != nil || res != consensus.ExpectationMismatch {
		t.Fatalf("stale append: %v, %v; want a mismatch", res, err)
	}
	if n, err := l.Truncate(ctx, "old", 2); err != nil || n != 2 {
		t.Fatalf("truncate to 2: %d, %v", n, err)
	}
	if res, err := l.CompareAndSet(ctx, "old", consensus.Empty, []byte("again")); err != nil || res != consensus.ExpectationMismatch {
		t.Fatalf("a stale first write after entry 0 was truncated: %v, %v; want a mismatch", res, err)
	}
	es, err := l.Scan(ctx, "old", 0, 10)
	if err != nil || len(es) != 3 || es[0].SeqNo != 2 || es[2].SeqNo != 4 {
		t.Fatalf("scan after the truncation: %+v, %v; want entries 2 to 4", es, err)
	}
	var seqs []int64
	rows, err := l.pool.Query(ctx, `SELECT seqno FROM `+l.table+` WHERE shard = 'old' ORDER BY seqno`)
	if err == nil {
		for rows.Next() {
			var n int64
			if err = rows.Scan(&n); err != nil {
				break
			}
			seqs = append(seqs, n)
		}
		rows.Close()
	}
	if err != nil || fmt.Sprint(seqs) != "[2 3 4]" {
		t.Fatalf("the shard's rows %v (%v); want entries 2 to 4, and no row the stale first write made", seqs, err)
	}
}

// variantLog runs CompareAndSet as another statement (casVariant without
// its pause): the benchmark's way to compare the predecessor's lock.
type variantLog struct {
	*Log
	cas string
}

func (v variantLog) CompareAndSet(ctx context.Context, shard string, expected int64, data []byte) (consensus.Result, error) {
	if expected == consensus.Empty {
		return v.Log.CompareAndSet(ctx, shard, expected, data)
	}
	return pausedLog{Log: v.Log, sql: v.cas}.CompareAndSet(ctx, shard, expected, data)
}

// predecessorLockVariant returns the log's CaS statement with the
// predecessor row locked by lock ("" for none), taking casVariant's four
// parameters.
func predecessorLockVariant(table, lock string) string {
	return fmt.Sprintf(`WITH expected_row AS (
	SELECT seqno FROM %s WHERE shard = $1 AND seqno = $2 %s
), paused AS (SELECT seqno FROM expected_row WHERE $4::bigint = $4::bigint)
INSERT INTO %s (shard, seqno, data) SELECT $1, seqno + 1, $3 FROM paused`, table, lock, table)
}

// BenchmarkCaSPredecessorLock measures the log's compare-and-set with its
// predecessor row locked FOR KEY SHARE (the statement of the log), not at
// all (incorrect: TestTeethCaSWithoutKeyShare) and FOR UPDATE, which
// conflicts with itself: appends of four goroutines each to shards of
// their own (the lock's cost), and to one shard at once, each reading the
// head and compare-and-setting on it (committed appends per second and
// the share of CaS lost to another).
func BenchmarkCaSPredecessorLock(b *testing.B) {
	url := pgtest.NewDB(b)
	runs := 0
	for _, v := range []struct{ name, lock string }{{"key-share", "FOR KEY SHARE"}, {"none", ""}, {"update", "FOR UPDATE"}} {
		l := open(b, url, Options{Table: "bench_" + strings.ReplaceAll(v.name, "-", "_")})
		log := consensus.Log(l)
		if v.lock != "FOR KEY SHARE" {
			log = variantLog{Log: l, cas: predecessorLockVariant(l.table, v.lock)}
		}
		for _, contended := range []bool{false, true} {
			name := v.name + "/own-shards"
			if contended {
				name = v.name + "/one-shard"
			}
			b.Run(name, func(b *testing.B) {
				// The function runs once per b.N tried: fresh shards each time.
				runs++
				var committed, lost, worker atomic.Int64
				b.SetParallelism(2) // four goroutines on two cores
				b.RunParallel(func(pb *testing.PB) {
					w := worker.Add(1)
					heads := map[string]int64{}
					for i := 0; pb.Next(); i++ {
						shard := fmt.Sprintf("r%d-w%d-%d", runs, w, i%16)
						if contended {
							shard = fmt.Sprintf("r%d", runs)
						}
						exp, ok := heads[shard]
						if !ok {
							exp = consensus.Empty
						}
						if contended {
							h, found, err := l.Head(b.Context(), shard)
							if err != nil {
								b.Error(err)
								return
							}
							if exp = consensus.Empty; found {
								exp = h.SeqNo
							}
						}
						res, err := log.CompareAndSet(b.Context(), shard, exp, []byte("x"))
						switch {
						case err != nil:
							b.Error(err)
							return
						case res == consensus.Committed:
							committed.Add(1)
							heads[shard] = exp + 1
						default:
							lost.Add(1)
						}
					}
				})
				b.ReportMetric(float64(committed.Load())/b.Elapsed().Seconds(), "appends/s")
				b.ReportMetric(float64(lost.Load())/float64(b.N), "lost/op")
			})
		}
	}
}

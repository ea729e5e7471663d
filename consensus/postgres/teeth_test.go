package postgres

// These tests reproduce the two incorrect interleavings of seed 000 on a real
// server. A test-only variant of a statement pauses between its snapshot and
// its insert by waiting for an advisory lock the test holds, so the schedule
// is fixed, not left to chance. Each schedule runs twice: with the broken
// statement, which the checks must catch, and with the real one, which they
// must pass.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/meterstore/meterstore/consensus"
	"github.com/meterstore/meterstore/consensus/consensustest"
	"github.com/meterstore/meterstore/internal/pgtest"
)

const pauseKey = 4242

// pausedLog runs CompareAndSet as a variant statement that blocks on the
// advisory lock pauseKey after taking its snapshot; other operations are
// the real ones.
type pausedLog struct {
	*Log
	sql string
}

func (p pausedLog) CompareAndSet(ctx context.Context, shard string, expected int64, data []byte) (consensus.Result, error) {
	args := []any{shard, data, int64(pauseKey)}
	if expected != consensus.Empty {
		args = []any{shard, expected, data, int64(pauseKey)}
	}
	tag, err := p.pool.Exec(ctx, p.sql, args...)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "23505":
		return consensus.ExpectationMismatch, nil
	case err != nil:
		return 0, err
	case tag.RowsAffected() == 0:
		return consensus.ExpectationMismatch, nil
	}
	return consensus.Committed, nil
}

// pause is a filter that waits for pauseKey; it references a column so the
// planner evaluates it per row, after the row (and its lock) was taken.
const pause = `pg_advisory_xact_lock_shared(%s)::text = ''`

func casVariant(table string, keyShare bool) string {
	lock := ""
	if keyShare {
		lock = "FOR KEY SHARE"
	}
	return strings.ReplaceAll(fmt.Sprintf(`WITH expected_row AS (
	SELECT seqno FROM {t} WHERE shard = $1 AND seqno = $2 %s
), paused AS (
	SELECT seqno FROM expected_row WHERE `+fmt.Sprintf(pause, "$4 + seqno * 0")+`
)
INSERT INTO {t} (shard, seqno, data) SELECT $1, seqno + 1, $3 FROM paused`, lock), "{t}", table)
}

func firstWriteVariant(table string, withMarker bool) string {
	if withMarker { // the real statement, paused
		return newStatements(table).first + " AND " + fmt.Sprintf(pause, "$3")
	}
	// The statement that was correct under SERIALIZABLE only.
	return strings.ReplaceAll(`INSERT INTO {t} (shard, seqno, data)
SELECT $1, 0, $2
WHERE NOT EXISTS (SELECT 1 FROM {t} WHERE shard = $1) AND `+fmt.Sprintf(pause, "$3")+`
ON CONFLICT DO NOTHING`, "{t}", table)
}

// schedule holds the advisory lock that paused statements wait for.
type schedule struct {
	t    *testing.T
	l    *Log
	conn *pgx.Conn
}

func newSchedule(t *testing.T, l *Log, url string) *schedule {
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(t.Context(), "SELECT pg_advisory_lock($1)", int64(pauseKey)); err != nil {
		t.Fatal(err)
	}
	return &schedule{t: t, l: l, conn: conn}
}

func (s *schedule) release() {
	if _, err := s.conn.Exec(s.t.Context(), "SELECT pg_advisory_unlock($1)", int64(pauseKey)); err != nil {
		s.t.Fatal(err)
	}
}

// waitFor polls cond for at most 20 s.
func (s *schedule) waitFor(what string, cond string) {
	s.t.Helper()
	for range 2000 {
		var ok bool
		if err := s.conn.QueryRow(s.t.Context(), cond).Scan(&ok); err != nil {
			s.t.Fatal(err)
		}
		if ok {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.t.Fatalf("timed out waiting for %s", what)
}

const (
	pausedWaiting   = `SELECT count(*) > 0 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`
	truncateBlocked = `SELECT count(*) > 0 FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'WITH guard%'`
)

type outcome struct {
	out consensustest.Output
	err error
}

func async(rec *consensustest.Recorder, client int, l consensus.Log, in consensustest.Input) chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		out, err := rec.Do(context.Background(), client, l, in)
		ch <- outcome{out, err}
	}()
	return ch
}

func do(t *testing.T, rec *consensustest.Recorder, client int, l consensus.Log, in consensustest.Input) consensustest.Output {
	t.Helper()
	out, err := rec.Do(t.Context(), client, l, in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func cas(shard string, exp int64, data string) consensustest.Input {
	return consensustest.Input{Shard: shard, Kind: consensustest.OpCAS, Expected: exp, Data: data}
}

// verdict reports what the two checks say: the raw table's contiguity and
// porcupine on the recorded history.
func verdict(t *testing.T, l *Log, shard string, rec *consensustest.Recorder) (contiguousErr error, lin porcupine.CheckResult) {
	t.Helper()
	do(t, rec, 9, l, consensustest.Input{Shard: shard, Kind: consensustest.OpScan, From: 0, Limit: 100})
	lin, _ = consensustest.Check(rec.History(), 0)
	return contiguous(t.Context(), l, shard), lin
}

// TestTeethCaSWithoutKeyShare: A's CaS on expected 4 pauses after its
// snapshot; B appends 5, 6, 7; a truncation at 7 runs; A resumes.
func TestTeethCaSWithoutKeyShare(t *testing.T) {
	for _, keyShare := range []bool{false, true} {
		t.Run(fmt.Sprintf("keyShare=%v", keyShare), func(t *testing.T) {
			url := pgtest.NewDB(t)
			l := open(t, url, Options{})
			a := pausedLog{l, casVariant(l.table, keyShare)}
			rec := consensustest.NewRecorder(64)
			for i := range 5 {
				do(t, rec, 1, l, cas("s", int64(i)-1, fmt.Sprintf("e%d", i)))
			}
			s := newSchedule(t, l, url)
			aDone := async(rec, 0, a, cas("s", 4, "a5"))
			s.waitFor("A to pause", pausedWaiting)
			for i := 5; i <= 7; i++ {
				if out := do(t, rec, 1, l, cas("s", int64(i)-1, fmt.Sprintf("e%d", i))); out.Result != consensus.Committed {
					t.Fatalf("B's append %d: %v", i, out.Result)
				}
			}
			trDone := async(rec, 2, l, consensustest.Input{Shard: "s", Kind: consensustest.OpTruncate, Cut: 7})
			if keyShare {
				// The lock on row 4 must hold the truncation back.
				s.waitFor("truncate to block on A's lock", truncateBlocked)
			} else if tr := <-trDone; tr.err != nil || tr.out.Removed != 7 {
				t.Fatalf("truncate: %+v", tr)
			}
			s.release()
			ao := <-aDone
			if ao.err != nil {
				t.Fatal(ao.err)
			}
			if keyShare {
				if tr := <-trDone; tr.err != nil || tr.out.Removed != 7 {
					t.Fatalf("truncate: %+v", tr)
				}
			}
			cerr, lin := verdict(t, l, "s", rec)
			t.Logf("A: %v; contiguity: %v; porcupine: %v", ao.out.Result, cerr, lin)
			if keyShare {
				if ao.out.Result != consensus.ExpectationMismatch || cerr != nil || lin != porcupine.Ok {
					t.Fatalf("real statement: A %v, contiguity %v, porcupine %v", ao.out.Result, cerr, lin)
				}
			} else if ao.out.Result != consensus.Committed || cerr == nil || lin != porcupine.Illegal {
				t.Fatalf("broken statement not caught: A %v, contiguity %v, porcupine %v", ao.out.Result, cerr, lin)
			}
		})
	}
}

// TestTeethFirstWriteWithoutMarker: A's first write pauses after seeing an
// empty shard; B creates the shard, appends 1..3, truncates at 3; A resumes.
func TestTeethFirstWriteWithoutMarker(t *testing.T) {
	for _, marker := range []bool{false, true} {
		t.Run(fmt.Sprintf("marker=%v", marker), func(t *testing.T) {
			url := pgtest.NewDB(t)
			l := open(t, url, Options{})
			a := pausedLog{l, firstWriteVariant(l.table, marker)}
			rec := consensustest.NewRecorder(64)
			s := newSchedule(t, l, url)
			aDone := async(rec, 0, a, cas("s", consensus.Empty, "a0"))
			s.waitFor("A to pause", pausedWaiting)
			for i := range 4 {
				if out := do(t, rec, 1, l, cas("s", int64(i)-1, fmt.Sprintf("e%d", i))); out.Result != consensus.Committed {
					t.Fatalf("B's append %d: %v", i, out.Result)
				}
			}
			if out := do(t, rec, 1, l, consensustest.Input{Shard: "s", Kind: consensustest.OpTruncate, Cut: 3}); out.Removed != 3 {
				t.Fatalf("truncate removed %d", out.Removed)
			}
			s.release()
			ao := <-aDone
			if ao.err != nil {
				t.Fatal(ao.err)
			}
			cerr, lin := verdict(t, l, "s", rec)
			t.Logf("A: %v; contiguity: %v; porcupine: %v", ao.out.Result, cerr, lin)
			if marker {
				if ao.out.Result != consensus.ExpectationMismatch || cerr != nil || lin != porcupine.Ok {
					t.Fatalf("real statement: A %v, contiguity %v, porcupine %v", ao.out.Result, cerr, lin)
				}
			} else if ao.out.Result != consensus.Committed || cerr == nil || lin != porcupine.Illegal {
				t.Fatalf("broken statement not caught: A %v, contiguity %v, porcupine %v", ao.out.Result, cerr, lin)
			}
		})
	}
}

// contiguous checks a shard's rows on the server: the marker at -1, then
// one interval of sequence numbers.
func contiguous(ctx context.Context, l *Log, shard string) error {
	rows, err := l.pool.Query(ctx, "SELECT seqno FROM "+l.table+" WHERE shard = $1 ORDER BY seqno", shard)
	if err != nil {
		return err
	}
	seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return err
	}
	if len(seqs) == 0 {
		return nil
	}
	if seqs[0] != -1 || len(seqs) == 1 {
		return fmt.Errorf("shard %q: rows %v: want the marker -1 and at least one entry", shard, seqs)
	}
	for i := 2; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			return fmt.Errorf("shard %q: rows %v are not contiguous", shard, seqs)
		}
	}
	return nil
}

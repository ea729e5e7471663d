package hot

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/series"
)

// The operators of the upgrade tests' readings: the stored rows' and a
// second one, which the rule refuses for the same readings.
const (
	firstOperator  = "9900000000003"
	secondOperator = "9900000000010"
)

// upgradeFixture declares lastgang with integrity from, in partitions of
// day and the day after, and stores the 96 quarter hours of meters 1 to
// meters on each day, through Write; the tier backfills in batches of
// 300 rows, about three meters.
func upgradeFixture(t *testing.T, from series.Integrity, meters int) (*Tier, *pgxpool.Pool) {
	t.Helper()
	h, pool := newTier(t, Options{})
	h.upgradeBatch = 300
	tab := lastgang("lastgang")
	tab.Integrity = from
	declare(t, h, tab)
	for i := 1; i <= meters; i++ {
		mustWrite(t, h, tab, meterDay(i, 100))
		next := meterDay(i, 100)
		for n := range next {
			next[n].From, next[n].To = next[n].From.AddDate(0, 0, 1), next[n].To.AddDate(0, 0, 1)
		}
		mustWrite(t, h, tab, next)
	}
	return h, pool
}

// upgradeAsync declares lastgang with integrity statement on h in a
// goroutine; the channel carries Ensure's error.
func upgradeAsync(ctx context.Context, h *Tier) chan error {
	done := make(chan error, 1)
	go func() {
		up := lastgang("lastgang")
		up.Integrity = series.IntegrityStatement
		done <- h.Ensure(ctx, up)
	}()
	return done
}

// pauseAt makes h's upgrade stop at the n-th step named step until the
// returned function is called; paused is closed when it stopped.
func pauseAt(h *Tier, step string, n int) (paused chan struct{}, resume func()) {
	paused, cont := make(chan struct{}), make(chan struct{})
	seen := 0
	h.onUpgradeStep = func(s string) {
		if s != step {
			return
		}
		if seen++; seen == n {
			close(paused)
			<-cont
		}
	}
	var once sync.Once
	return paused, func() { once.Do(func() { close(cont) }) }
}

// uncovered counts the stored rows of lastgang that no span of their
// operator in the ownership relation covers.
func uncovered(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	err := pool.QueryRow(context.Background(), `SELECT count(*) FROM meterstore.lastgang r WHERE NOT EXISTS (
	SELECT 1 FROM meterstore.lastgang_operators o WHERE o.malo_id = r.malo_id::int8 AND o.obis_code = `+obisKey("r.obis_code")+`
	AND o.operator = split_part(r.version_scope, ':', 1) AND o.span @> tstzrange(r."from", r."to"))`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestUpgradeRowsDuringBackfill upgrades a table of integrity exclusion
// and one of integrity write to statement and stops the backfill after
// its second batch, when the spans of meters 1 to 8 of the first day are
// recorded and none of the rest. Meanwhile a plain client's reading of a
// second operator is refused as it is after the upgrade (SQLSTATE
// 23P01), for a meter whose spans are recorded, one whose spans are not,
// one of the day not reached, and against a reading written meanwhile;
// readings of one operator go in, through Write and plain SQL. The
// upgrade then completes: every stored row is covered by a span of its
// operator, and a second operator is refused by the ownership relation.
func TestUpgradeRowsDuringBackfill(t *testing.T) {
	for _, from := range []series.Integrity{series.IntegrityExclusion, series.IntegrityWrite} {
		t.Run(from.String(), func(t *testing.T) {
			ctx := t.Context()
			h, pool := upgradeFixture(t, from, 20)
			paused, resume := pauseAt(h, "batched", 2)
			defer resume()
			done := upgradeAsync(ctx, h)
			select {
			case <-paused:
			case err := <-done:
				t.Fatalf("the upgrade ended before its second batch: %v", err)
			}
			if n := uncovered(t, pool); n == 0 || n == 40*96 {
				t.Fatalf("%d of %d stored rows uncovered in the middle of the backfill", n, 40*96)
			}
			c := sqlClient{pool: pool, rel: "meterstore.lastgang"}
			for _, x := range []struct {
				what        string
				meter, slot int
			}{
				{"a meter the backfill recorded", 2, 5},
				{"a meter the backfill did not reach", 15, 5},
				{"a meter on the day the backfill did not reach", 3, 96 + 5},
			} {
				if err := c.insert(ctx, pool, malo(x.meter), "kWh", x.slot, 101, secondOperator, 1); !refusedAs(err, "23P01") {
					t.Errorf("a second operator for %s: %v; want 23P01", x.what, err)
				}
			}
			if err := c.insert(ctx, pool, malo(50), "kWh", 5, 1, secondOperator, 1); err != nil {
				t.Fatalf("a new meter's reading during the backfill: %v", err)
			}
			if err := c.insert(ctx, pool, malo(50), "kWh", 5, 2, firstOperator, 1); !refusedAs(err, "23P01") {
				t.Errorf("a second operator for a reading written during the backfill: %v; want 23P01", err)
			}
			if err := c.insert(ctx, pool, malo(16), "kWh", 5, 101, firstOperator, 1); err != nil {
				t.Errorf("a new version of the stored operator during the backfill: %v", err)
			}
			mustWrite(t, h, lastgang("lastgang"), meterDay(17, 102))
			mustWrite(t, h, lastgang("lastgang"), meterDay(51, 1))

			resume()
			if err := <-done; err != nil {
				t.Fatalf("the upgrade: %v", err)
			}
			if got, err := newTierOn(t, pool).Integrity(ctx, lastgang("lastgang")); err != nil || got != series.IntegrityStatement {
				t.Fatalf("recorded integrity %v, %v", got, err)
			}
			if n := uncovered(t, pool); n != 0 {
				t.Fatalf("%d stored rows uncovered after the upgrade", n)
			}
			var dup int
			if err := pool.QueryRow(ctx, `SELECT count(*) - count(DISTINCT (malo_id, obis_code, operator, span)) FROM meterstore.lastgang_operators`).Scan(&dup); err != nil || dup != 0 {
				t.Fatalf("%d spans recorded twice (%v)", dup, err)
			}
			err := c.insert(ctx, pool, malo(15), "kWh", 6, 101, secondOperator, 1)
			if !refusedAs(err, "23P01") || !refusedBy(err, "lastgang_operators_one") {
				t.Fatalf("a second operator after the upgrade: %v; want the ownership relation's refusal", err)
			}
		})
	}
}

// TestUpgradeBackfillHoldsNoWriterLock stops an upgrade inside its first
// backfill transaction: no session holds a lock on the table or a
// partition that an INSERT waits for, and a plain client whose lock
// timeout is 1 s writes a reading; then the upgrade completes.
func TestUpgradeBackfillHoldsNoWriterLock(t *testing.T) {
	ctx := t.Context()
	h, pool := upgradeFixture(t, series.IntegrityExclusion, 10)
	paused, resume := pauseAt(h, "batch", 1)
	defer resume()
	done := upgradeAsync(ctx, h)
	select {
	case <-paused:
	case err := <-done:
		t.Fatalf("the upgrade ended before its first batch: %v", err)
	}
	rows, err := pool.Query(ctx, `SELECT c.relname || ' ' || l.mode FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
WHERE l.granted AND c.relname LIKE 'lastgang%' AND c.relname <> 'lastgang_operators'
AND l.mode IN ('ShareLock', 'ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock')`)
	if err != nil {
		t.Fatal(err)
	}
	var held []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		held = append(held, s)
	}
	if rows.Err() != nil || len(held) > 0 {
		t.Errorf("during the backfill, locks a writer waits for: %v (%v)", held, rows.Err())
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET lock_timeout = '1s'`); err != nil {
		t.Fatal(err)
	}
	c := sqlClient{pool: pool, rel: "meterstore.lastgang"}
	if err := c.insert(ctx, conn, malo(60), "kWh", 7, 1, firstOperator, 1); err != nil {
		t.Errorf("a writer with a lock timeout of 1 s during the backfill: %v", err)
	}
	if _, err := conn.Exec(ctx, `RESET lock_timeout`); err != nil {
		t.Fatal(err)
	}
	resume()
	if err := <-done; err != nil {
		t.Fatalf("the upgrade: %v", err)
	}
}

// TestUpgradeWaitIsBounded: while a writer's transaction is open on the
// table, an upgrade queues for its lock; a second writer, queued behind
// it with a lock timeout of 1 s, still writes, because the upgrade gives
// up within upgradeLockWait. The upgrade then fails as deferred
// (retryable), having changed nothing, and succeeds once the first
// writer is done.
func TestUpgradeWaitIsBounded(t *testing.T) {
	ctx := t.Context()
	h, pool := upgradeFixture(t, series.IntegrityExclusion, 3)
	c := sqlClient{pool: pool, rel: "meterstore.lastgang"}
	first, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Rollback(ctx)
	if err := c.insert(ctx, first, malo(70), "kWh", 1, 1, firstOperator, 1); err != nil {
		t.Fatal(err)
	}
	done := upgradeAsync(ctx, h)
	for queued := false; !queued; {
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE NOT granted AND relation = 'meterstore.lastgang'::regclass
			AND mode = 'ShareRowExclusiveLock')`).Scan(&queued); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			t.Fatalf("the upgrade ended before it queued for its lock: %v", err)
		default:
		}
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET lock_timeout = '1s'`); err != nil {
		t.Fatal(err)
	}
	if err := c.insert(ctx, conn, malo(71), "kWh", 1, 1, firstOperator, 1); err != nil {
		t.Errorf("a writer queued behind the upgrade, with a lock timeout of 1 s: %v", err)
	}
	if _, err := conn.Exec(ctx, `RESET lock_timeout`); err != nil {
		t.Fatal(err)
	}
	err = <-done
	if !errors.Is(err, ErrDeferred) || !series.IsRetryable(err) {
		t.Fatalf("the upgrade behind an open writer: %v; want a retryable ErrDeferred", err)
	}
	if records, err := h.recordsSpans(ctx, pool, lastgang("lastgang")); err != nil || records {
		t.Fatalf("the deferred upgrade left its triggers: %v, %v", records, err)
	}
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-upgradeAsync(ctx, h); err != nil {
		t.Fatalf("the upgrade once the writer is done: %v", err)
	}
	if n := uncovered(t, pool); n != 0 {
		t.Fatalf("%d stored rows uncovered after the upgrade", n)
	}
}

// TestUpgradeResumes ends an upgrade in the middle of its backfill, as a
// process that dies does: the table keeps its recorded integrity, its
// triggers go on refusing a second operator, and the next declaration
// with integrity statement completes the upgrade without recording a span
// twice.
func TestUpgradeResumes(t *testing.T) {
	h, pool := upgradeFixture(t, series.IntegrityWrite, 12)
	ctx, cancel := context.WithCancel(t.Context())
	seen := 0
	h.onUpgradeStep = func(s string) {
		if s == "batched" {
			if seen++; seen == 2 {
				cancel()
			}
		}
	}
	if err := <-upgradeAsync(ctx, h); err == nil {
		t.Fatal("an upgrade whose context ended in its backfill succeeded")
	}
	h.onUpgradeStep = nil
	ctx = t.Context()
	other := newTierOn(t, pool)
	if got, err := other.Integrity(ctx, lastgang("lastgang")); err != nil || got != series.IntegrityWrite {
		t.Fatalf("recorded integrity after the interrupted upgrade: %v, %v", got, err)
	}
	if n := uncovered(t, pool); n == 0 {
		t.Fatal("fixture: the interrupted backfill recorded every span")
	}
	c := sqlClient{pool: pool, rel: "meterstore.lastgang"}
	if err := c.insert(ctx, pool, malo(11), "kWh", 96+9, 101, secondOperator, 1); !refusedAs(err, "23P01") {
		t.Fatalf("a second operator while the upgrade is suspended: %v; want 23P01", err)
	}
	if err := <-upgradeAsync(ctx, h); err != nil {
		t.Fatalf("the resumed upgrade: %v", err)
	}
	if n := uncovered(t, pool); n != 0 {
		t.Fatalf("%d stored rows uncovered after the resumed upgrade", n)
	}
	var dup int
	if err := pool.QueryRow(ctx, `SELECT count(*) - count(DISTINCT (malo_id, obis_code, operator, span)) FROM meterstore.lastgang_operators`).Scan(&dup); err != nil || dup != 0 {
		t.Fatalf("%d spans recorded twice (%v)", dup, err)
	}
}

// newTierOn returns a second tier on pool, as another process has.
func newTierOn(t *testing.T, pool *pgxpool.Pool) *Tier {
	t.Helper()
	h, err := New(pool, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// refusedBy reports whether err is PostgreSQL's refusal by constraint.
func refusedBy(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.ConstraintName == constraint
}

package hot

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/meterstore/meterstore/series"
)

// defaultCompactFloor is the smallest heap of a companion Compact rewrites:
// below it the free space is not worth a lock that stops its writers.
const defaultCompactFloor = 1 << 20

// Compact rewrites those of t's companions (ownership relation,
// dictionaries, day sums, dirty log; see companions) whose live rows fill
// less than half their heap of at least 1 MiB, and returns their names.
// A dropped partition's rows leave such heaps behind: plain VACUUM cannot
// give the space back while live rows sit at the heap's end.
//
// The rewrite is VACUUM FULL, which keeps every row version a snapshot
// may still see. It holds ACCESS EXCLUSIVE on the one companion while it
// copies the live rows, so the writers and readers of t wait for that
// long; it waits for the lock at most upgradeWait, below PostgreSQL's
// deadlock timeout, and otherwise skips the companion (to be tried at
// the next call) with nothing changed.
func (h *Tier) Compact(ctx context.Context, t *series.Table) ([]string, error) {
	const op = "compact"
	if err := t.Validate(); err != nil {
		return nil, err
	}
	info, _, err := h.declared(ctx, h.pool, t)
	if err != nil {
		return nil, classify(op, t.Name, err)
	}
	var done []string
	for _, name := range companions(t, info.integrity, info.layout) {
		ok, err := h.compact(ctx, name)
		if err != nil {
			return done, classify(op, t.Name, fmt.Errorf("compact %s: %w", name, err))
		}
		if ok {
			done = append(done, name)
		}
	}
	return done, nil
}

// compact rewrites the companion name if its live rows fill less than
// half its heap, and reports whether it did.
func (h *Tier) compact(ctx context.Context, name string) (bool, error) {
	rel := h.ident(name)
	var exists bool
	if err := h.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, rel).Scan(&exists); err != nil || !exists {
		return false, err
	}
	// A row takes its tuple (header included) and a line pointer.
	var heap, live int64
	if err := h.pool.QueryRow(ctx, `SELECT pg_relation_size($1::regclass),
	(SELECT coalesce(sum(pg_column_size(r.*) + 4), 0) FROM `+rel+` r)`, rel).Scan(&heap, &live); err != nil {
		return false, err
	}
	if heap < h.compactFloor || 2*live >= heap {
		return false, nil
	}
	before, took, err := h.vacuumFull(ctx, rel)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "55P03": // lock_not_available
		h.log.Info("hot: compaction deferred", "relation", name, "lock_timeout", h.upgradeWait())
		return false, nil
	case errors.As(err, &pgErr) && pgErr.Code == "42P01": // undefined_table: an upgrade replaced it
		return false, nil
	case err != nil:
		return false, err
	}
	var after int64
	if err := h.pool.QueryRow(ctx, `SELECT pg_total_relation_size($1::regclass)`, rel).Scan(&after); err != nil {
		return true, err
	}
	h.log.Info("hot: companion compacted", "relation", name, "bytes_before", before, "bytes_after", after, "live_bytes", live, "locked", took)
	return true, nil
}

// vacuumFull runs VACUUM FULL on rel, waiting for its lock at most
// upgradeWait, and returns rel's total size before and how long the
// statement took. VACUUM runs outside a transaction, so the timeout is
// set on the session and reset after.
func (h *Tier) vacuumFull(ctx context.Context, rel string) (before int64, took time.Duration, err error) {
	conn, err := h.pool.Acquire(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Release()
	if err := conn.QueryRow(ctx, `SELECT pg_total_relation_size($1::regclass)`, rel).Scan(&before); err != nil {
		return 0, 0, err
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf("SET lock_timeout = %d", h.upgradeWait().Milliseconds())); err != nil {
		return 0, 0, err
	}
	defer func() {
		if _, rerr := conn.Exec(context.WithoutCancel(ctx), "RESET lock_timeout"); rerr != nil {
			// The pool must not hand out a session with the timeout set.
			conn.Conn().Close(context.WithoutCancel(ctx))
		}
	}()
	start := time.Now()
	_, err = conn.Exec(ctx, "VACUUM (FULL) "+rel)
	return before, time.Since(start), err
}

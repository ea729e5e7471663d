package hot

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/meterstore/meterstore/series"
)

// ddl runs fn in one READ COMMITTED transaction in which every statement
// gives up waiting for a lock after the DDL lock timeout. PostgreSQL grants
// locks in arrival order, so a DDL statement queued for a strong lock
// stalls every reader and writer behind it; the timeout bounds that stall.
// A timeout rolls the whole transaction back and returns an Unavailable
// error wrapping ErrDeferred: nothing changed.
func (h *Tier) ddl(ctx context.Context, op, table string, fn func(tx pgx.Tx) error) error {
	tx, err := h.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return classify(op, table, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	ms := int64(0)
	if h.lockTimeout > 0 {
		ms = h.lockTimeout.Milliseconds()
	}
	if _, err = tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", ms)); err == nil {
		if err = fn(tx); err == nil {
			err = tx.Commit(ctx)
		}
	}
	if err == nil {
		return nil
	}
	var q *series.QuarantineError
	if errors.As(err, &q) {
		return err // a verdict on the declaration, not an error of the server
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "55P03" { // lock_not_available
		h.log.Info("hot: DDL deferred", "op", op, "table", table, "lock_timeout", h.lockTimeout)
		return &series.Error{Kind: series.Unavailable, Op: op, Table: table, Err: fmt.Errorf("%w: %w", ErrDeferred, err)}
	}
	return classify(op, table, err)
}

// lockKey returns the advisory lock key of a table in the tier's schema:
// the first half of the two-integer key, the second being a partition's day
// number. A collision between two tables only serializes their writers.
func (h *Tier) lockKey(table string) int32 {
	f := fnv.New32a()
	f.Write([]byte("meterstore.hot\x00" + h.schema + "\x00" + table))
	return int32(f.Sum32())
}

package archive

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/series"
)

// leaseKey2 is the second half of a lease's advisory lock key. The hot
// tier's keys have day numbers, 0 or math.MinInt32 there, so a lease never
// blocks a writer even if the first halves collide.
const leaseKey2 = math.MinInt32 + 1

// A lease is the archive lease of one table: a session-level advisory lock
// held on a connection taken from the pool for the cycle. If the process
// dies the server ends the session and the lock with it.
type lease struct {
	conn *pgxpool.Conn
	key  int32
}

// leaseKey returns the first half of the lease key of a table.
func leaseKey(schema, table string) int32 {
	f := fnv.New32a()
	f.Write([]byte("meterstore.archive\x00" + schema + "\x00" + table))
	return int32(f.Sum32())
}

// acquireLease tries to take the lease of table without waiting. It returns
// nil and no error if another session holds it.
func acquireLease(ctx context.Context, pool *pgxpool.Pool, schema, table string) (*lease, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("archive %s: lease: %w", table, err)
	}
	l := &lease{conn: conn, key: leaseKey(schema, table)}
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, l.key, int32(leaseKey2)).Scan(&ok); err != nil {
		l.discard()
		return nil, fmt.Errorf("archive %s: lease: %w", table, err)
	}
	if !ok {
		conn.Release()
		return nil, nil
	}
	return l, nil
}

// release gives the lease up and returns the connection to the pool. A
// connection whose unlock failed may still hold the lock, so it is closed
// instead of being pooled, which ends the session and the lock.
func (l *lease) release(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	var ok bool
	if err := l.conn.QueryRow(ctx, `SELECT pg_advisory_unlock($1, $2)`, l.key, int32(leaseKey2)).Scan(&ok); err != nil || !ok {
		l.discard()
		return
	}
	l.conn.Release()
}

func (l *lease) discard() {
	l.conn.Conn().Close(context.Background())
	l.conn.Release()
}

// ErrLeaseHeld is returned by WithLease when another session holds the
// table's archive lease; it is retryable.
var ErrLeaseHeld = series.NewSentinel("the archive lease of the table is held by another session", true)

// WithLease runs fn while it holds the archive lease of table, so that
// what fn commits cannot interleave with an archival of the table, in this
// process or another: snapshot expiry and the re-stamp of the watermark.
// It does not wait: when another session holds the lease, fn does not run
// and the error wraps ErrLeaseHeld.
func (a *Archiver) WithLease(ctx context.Context, table string, fn func(ctx context.Context) error) error {
	l, err := acquireLease(ctx, a.pool, a.hot.Schema(), table)
	if err != nil {
		return err
	}
	if l == nil {
		return fmt.Errorf("archive %s: %w", table, ErrLeaseHeld)
	}
	defer l.release(ctx)
	return fn(ctx)
}

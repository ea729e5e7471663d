package archive

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/meterstore/meterstore/internal/pgerr"
)

// ledgerTable records, per partition, what the archiver did with it. It is
// bookkeeping, not the truth: which partitions exist and are attached is
// PostgreSQL's catalog, what is archived is W. The ledger adds only what
// neither knows: when the commit covering a partition landed (the reader
// grace runs from it), how many rows it held, and whether a check failed, in
// which case the partition is never dropped.
const ledgerTable = "archive_partitions"

// A record is the ledger's row of one partition.
type record struct {
	detachedAt time.Time  // the cycle's now when it was detached
	archivedAt *time.Time // the cycle's now when its commit was confirmed
	rows       *int64     // rows it held, as confirmed
	violation  *string    // why it must be kept, if a check failed
}

// ledgerFailed wraps a failure of a statement on the ledger of table,
// classified as every failure of PostgreSQL is: a read of the ledger is
// the first step of a query of both tiers, a status or an archival, and
// a connection lost under it (an unexpected EOF, which nothing above
// takes for a network failure) left unclassified made a query answer 500
// internal where PostgreSQL was only briefly away.
func ledgerFailed(table string, err error) error {
	return pgerr.Classify("archive", table, fmt.Errorf("ledger: %w", err))
}

// A ledger is the archive_partitions table in the hot tier's schema.
type ledger struct {
	pool   *pgxpool.Pool
	schema string
}

func (l *ledger) ident() string { return pgx.Identifier{l.schema, ledgerTable}.Sanitize() }

// ensure creates the ledger unless it exists. Concurrent CREATE TABLE IF NOT
// EXISTS can collide in the catalog, so creators take turns.
func (l *ledger) ensure(ctx context.Context) error {
	return pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, leaseKey(l.schema, ledgerTable), int32(leaseKey2)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+l.ident()+` (
	table_name      text NOT NULL,
	partition_start timestamptz NOT NULL,
	detached_at     timestamptz NOT NULL,
	archived_at     timestamptz,
	archived_rows   bigint,
	violation       text,
	PRIMARY KEY (table_name, partition_start))`)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+l.wmIdent()+` (
	table_name   text PRIMARY KEY,
	watermark    timestamptz NOT NULL,
	committed_at timestamptz NOT NULL)`)
		return err
	})
}

// detaching records that the partition at start is about to be detached.
// It is written before the DETACH, which runs in a transaction of the hot
// tier: a crash in between leaves a record of an attached partition, which
// is harmless, never a detached partition without a record.
func (l *ledger) detaching(ctx context.Context, table string, start, now time.Time) error {
	_, err := l.pool.Exec(ctx, `INSERT INTO `+l.ident()+` (table_name, partition_start, detached_at) VALUES ($1, $2, $3)
ON CONFLICT (table_name, partition_start) DO NOTHING`, table, start, now)
	return err
}

// archived records, in one transaction, that the commit covering the
// partitions at starts landed, with counts[i] rows in the i-th; so a crash
// leaves either all partitions of a window recorded or none.
func (l *ledger) archived(ctx context.Context, table string, starts []time.Time, counts []int64, now time.Time) error {
	return pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		for i, start := range starts {
			if _, err := tx.Exec(ctx, `INSERT INTO `+l.ident()+` (table_name, partition_start, detached_at, archived_at, archived_rows)
VALUES ($1, $2, $3, $3, $4)
ON CONFLICT (table_name, partition_start) DO UPDATE SET archived_at = $3, archived_rows = $4`, table, start, now, counts[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// violated records why the partition at start must be kept.
func (l *ledger) violated(ctx context.Context, table string, start, now time.Time, reason string) error {
	_, err := l.pool.Exec(ctx, `INSERT INTO `+l.ident()+` (table_name, partition_start, detached_at, violation)
VALUES ($1, $2, $3, $4)
ON CONFLICT (table_name, partition_start) DO UPDATE SET violation = $4`, table, start, now, reason)
	return err
}

// forget removes the record of the partition at start, after its drop.
func (l *ledger) forget(ctx context.Context, table string, start time.Time) error {
	_, err := l.pool.Exec(ctx, `DELETE FROM `+l.ident()+` WHERE table_name = $1 AND partition_start = $2`, table, start)
	return err
}

// records returns the ledger of table by partition start (Unix seconds).
func (l *ledger) records(ctx context.Context, table string) (map[int64]record, error) {
	rows, err := l.pool.Query(ctx, `SELECT partition_start, detached_at, archived_at, archived_rows, violation
FROM `+l.ident()+` WHERE table_name = $1`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[int64]record)
	for rows.Next() {
		var start time.Time
		var r record
		if err := rows.Scan(&start, &r.detachedAt, &r.archivedAt, &r.rows, &r.violation); err != nil {
			return nil, err
		}
		out[start.Unix()] = r
	}
	return out, rows.Err()
}

// watermarkTable records, per table, the highest watermark the archiver saw
// committed: written right after each archival commit and whenever a cycle
// reads W. It is the independent evidence of invariant 2: W never moves
// back, so a catalog whose log shows a lower W (or none) than this lost its
// newest entries. A crash between a commit and its record leaves the
// ledger lower than W, which is harmless: the next cycle records it.
const watermarkTable = "archive_watermarks"

func (l *ledger) wmIdent() string { return pgx.Identifier{l.schema, watermarkTable}.Sanitize() }

// committedW records that w is committed for table; the record only ever
// moves forward.
func (l *ledger) committedW(ctx context.Context, table string, w, now time.Time) error {
	_, err := l.pool.Exec(ctx, `INSERT INTO `+l.wmIdent()+` AS l (table_name, watermark, committed_at) VALUES ($1, $2, $3)
ON CONFLICT (table_name) DO UPDATE SET watermark = excluded.watermark, committed_at = excluded.committed_at
WHERE l.watermark < excluded.watermark`, table, w, now)
	return err
}

// highestW returns the highest watermark recorded for table; ok is false
// when none is, or the ledger does not exist yet.
func (l *ledger) highestW(ctx context.Context, table string) (w time.Time, ok bool, err error) {
	err = l.pool.QueryRow(ctx, `SELECT watermark FROM `+l.wmIdent()+` WHERE table_name = $1`, table).Scan(&w)
	switch {
	case errors.Is(err, pgx.ErrNoRows), pgerr.NoTable(err):
		return time.Time{}, false, nil
	case err != nil:
		return time.Time{}, false, err
	}
	return w.UTC(), true, nil
}

// forgetW removes the record of table, after its purge.
func (l *ledger) forgetW(ctx context.Context, table string) error {
	_, err := l.pool.Exec(ctx, `DELETE FROM `+l.wmIdent()+` WHERE table_name = $1`, table)
	if pgerr.NoTable(err) {
		return nil
	}
	return err
}

// recordsIfAny is records, or none where the ledger does not exist yet
// because nothing was ever archived; it creates nothing.
func (l *ledger) recordsIfAny(ctx context.Context, table string) (map[int64]record, error) {
	var exists bool
	if err := l.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, l.ident()).Scan(&exists); err != nil {
		return nil, err
	}
	if !exists {
		return map[int64]record{}, nil
	}
	return l.records(ctx, table)
}

package hot

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/series"
)

// ErrBelowFloor is wrapped by the refusal to create a partition below its
// table's partition floor: the window it would hold is archived, or an
// archival is about to archive it, and a partition there would hold rows
// below the watermark, where no query looks.
var ErrBelowFloor = errors.New("below the partition floor: the window is archived or being archived")

// ErrNoPartition is wrapped by the refusal of a batch with rows that have
// no attached partition; the error's Rows are exactly those rows.
var ErrNoPartition = errors.New("no attached partition")

// floorColumn is the column of hot_tables that holds a table's partition
// floor: no partition starting below it is ever created. Archival raises
// it to a window's end before the window's commit can move the watermark
// there, under the lock partition DDL takes, so the floor is never below
// the watermark.
const floorColumn = "partition_floor"

// ensureFloorColumn adds the floor to a hot_tables created before it
// existed. It looks first, so that a current schema takes no lock on the
// table.
func (h *Tier) ensureFloorColumn(ctx context.Context, tx pgx.Tx) error {
	var has bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_attribute
WHERE attrelid = to_regclass($1) AND attname = $2 AND NOT attisdropped)`, h.ident(metaTable), floorColumn).Scan(&has)
	if err != nil || has {
		return err
	}
	_, err = tx.Exec(ctx, `ALTER TABLE `+h.ident(metaTable)+` ADD COLUMN IF NOT EXISTS `+floorColumn+` timestamptz`)
	return err
}

// Fence raises t's partition floor to floor, unless it is higher already,
// and returns t's partitions, attached and detached, as they are once no
// partition can be created below the floor any more.
//
// An archival fences a window's end before it detaches the window's
// partitions and commits: the floor and the partition DDL share one lock,
// so a partition created before the fence is in the list it returns, and
// none can be created below the floor after it. The window the archival
// planned must therefore still hold exactly the partitions listed, or it is
// to be planned again; with that, every partition below a committed
// watermark was detached before the commit, and none appears there later.
// Like every DDL it waits at most the DDL lock timeout (ErrDeferred).
func (h *Tier) Fence(ctx context.Context, t *series.Table, floor time.Time) ([]Partition, error) {
	const op = "fence partitions"
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if _, err := h.partitionAt(t, op, floor); err != nil {
		return nil, err
	}
	var parts []Partition
	err := h.ddl(ctx, op, t.Name, func(tx pgx.Tx) error {
		if err := h.lockDDL(ctx, tx, t); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE `+h.ident(metaTable)+` SET `+floorColumn+` = GREATEST(`+floorColumn+`, $2) WHERE name = $1`, t.Name, floor)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return &series.Error{Kind: series.InvariantViolation, Op: op, Table: t.Name, Err: errors.New("the table is not declared")}
		}
		parts, err = h.partitions(ctx, tx, t)
		return err
	})
	if err != nil {
		return nil, err
	}
	return parts, nil
}

// PartitionFloor returns t's partition floor (see Fence); ok is false if
// none was set.
func (h *Tier) PartitionFloor(ctx context.Context, t *series.Table) (floor time.Time, ok bool, err error) {
	if err := t.Validate(); err != nil {
		return time.Time{}, false, err
	}
	f, err := h.partitionFloor(ctx, h.pool, t)
	if err != nil {
		return time.Time{}, false, classify("partition floor", t.Name, err)
	}
	if f == nil {
		return time.Time{}, false, nil
	}
	return *f, true, nil
}

// partitionFloor reads t's partition floor; nil if none was set.
func (h *Tier) partitionFloor(ctx context.Context, q querier, t *series.Table) (*time.Time, error) {
	var f *time.Time
	err := q.QueryRow(ctx, `SELECT `+floorColumn+` FROM `+h.ident(metaTable)+` WHERE name = $1`, t.Name).Scan(&f)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if f != nil {
		u := f.UTC()
		f = &u
	}
	return f, err
}

// checkFloor refuses partition p if it starts below t's floor. tx holds
// the DDL lock, so the floor cannot rise before tx commits.
func (h *Tier) checkFloor(ctx context.Context, tx pgx.Tx, t *series.Table, p Partition) error {
	f, err := h.partitionFloor(ctx, tx, t)
	if err != nil || f == nil || !p.From.Before(*f) {
		return err
	}
	return &series.Error{Kind: series.InvalidInput, Op: "create partition", Table: t.Name,
		Err: fmt.Errorf("partition %s starts at %s, below the partition floor %s: %w",
			p.Name, p.From.UTC().Format(time.RFC3339), f.Format(time.RFC3339), ErrBelowFloor)}
}

// lockDDL takes the transaction-level advisory lock that serializes the
// partition DDL of t and the floor.
func (h *Tier) lockDDL(ctx context.Context, tx pgx.Tx, t *series.Table) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, h.lockKey(t.Name), int32(ddlLockKey))
	return err
}

// querier is what a pool and a transaction share.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

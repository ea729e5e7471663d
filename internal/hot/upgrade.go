package hot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/meterstore/meterstore/series"
)

// An upgrade to IntegrityStatement gives a declared table of
// IntegrityExclusion or IntegrityWrite, in the rows layout, the ownership
// relation filled from its stored rows and the statement triggers, and
// takes its GiST exclusion constraints away, without stopping its writers
// for longer than a lock wait: no lock a writer conflicts with is held
// while rows are read.
//
//  1. In Ensure's transaction: the ownership relation, the check function
//     in its upgrading form, and the triggers on the parent and on every
//     attached partition. That takes SHARE ROW EXCLUSIVE on them, waited
//     for at most upgradeLockWait and held only for the DDL. From its
//     commit on every new row is checked and its spans recorded, and the
//     writers that were in flight have committed.
//  2. The backfill: the spans of the stored rows, a batch of about
//     upgradeBatchRows rows per transaction, which reads them and inserts
//     into the ownership relation, and so conflicts with no writer. A row
//     written meanwhile is checked exactly as after the upgrade: the
//     upgrading check first records the spans of the stored rows of its
//     series and partition (those a batch has not reached yet), then its
//     own, so the exclusion constraint refuses a second operator whichever
//     came first; the GiST constraints of IntegrityExclusion stay until
//     the end too. A batch that meets two operators in the stored rows
//     (which plain clients of IntegrityWrite can write) refuses the
//     upgrade, and everything phase 1 made is dropped again.
//  3. One transaction that takes no table lock: the check function in its
//     final form and the definition recorded as IntegrityStatement.
//  4. The GiST constraints, dropped partition by partition (ACCESS
//     EXCLUSIVE on one partition, waited for at most upgradeLockWait); one
//     left behind by a lock that did not come is dropped by the next
//     Ensure, and meanwhile only costs writes time.
//
// A process that dies in between leaves the triggers and a part of the
// spans, which keep every rule enforced; the next Ensure that declares
// IntegrityStatement resumes where the spans end (recorded spans are not
// recorded again). A partition created meanwhile gets the triggers
// (createPartitionTx asks recordsSpans), so its rows need no backfill.
// The one gap is a partition a process of an older MeterStore creates
// during the upgrade: it gets no triggers, and rows a plain client writes
// into it directly (not through the parent) before phase 3 are checked
// against the stored rows only by the backfill that phase 3 waits for.

// upgradeLockWait bounds each wait for a lock of an upgrade (or the DDL
// lock timeout, if shorter): a writer queued behind it waits no longer
// than this plus the few DDL statements the lock is held for.
const upgradeLockWait = 500 * time.Millisecond

// upgradeBatchRows is about how many stored rows one backfill transaction
// records the spans of.
const upgradeBatchRows = 50_000

// upgradeAttempts bounds how often an upgrade step whose lock did not
// come within upgradeLockWait is tried again.
const upgradeAttempts = 5

// errSpansConflict marks a backfill that met readings of two network
// operators for one interval among the stored rows.
var errSpansConflict = errors.New("stored readings come from two network operators")

// beginUpgrade is phase 1 of an upgrade of t to IntegrityStatement, in
// Ensure's transaction tx. Run again after a process died in phase 2, it
// adds what is missing.
func (h *Tier) beginUpgrade(ctx context.Context, tx pgx.Tx, t *series.Table) error {
	under, err := h.recordsSpans(ctx, tx, t)
	if err != nil {
		return err
	}
	if !under {
		if err := h.refuseTaken(ctx, tx, "ensure", t, series.IntegrityStatement, layoutRows); err != nil {
			return err
		}
	}
	if err := h.lockForUpgrade(ctx, tx, t, "SHARE ROW EXCLUSIVE"); err != nil {
		return err
	}
	parts, err := h.partitions(ctx, tx, t)
	if err != nil {
		return err
	}
	var stmts []string
	if !under {
		stmts = rowsOwnersDDL(h, t)
	}
	stmts = append(stmts, h.upgradingFuncDDL(t))
	stmts = append(stmts, orReplace(h.triggerDDL(t, h.ident(t.Name), t.Name))...)
	for _, p := range parts {
		if p.Attached { // a detached one is being archived; no writer reaches it
			stmts = append(stmts, orReplace(h.triggerDDL(t, h.ident(p.Name), p.Name))...)
		}
	}
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return err
		}
	}
	h.log.Info("hot: upgrade to integrity statement begun", "table", t.Name, "partitions", len(parts), "resumed", under)
	return nil
}

// completeUpgrade runs phases 2 to 4 of an upgrade of t to
// IntegrityStatement, after phase 1 committed.
func (h *Tier) completeUpgrade(ctx context.Context, t *series.Table) error {
	const op = "ensure"
	start := time.Now()
	h.upgradeStep("begun")
	parts, err := h.partitions(ctx, h.pool, t)
	if err != nil {
		return classify(op, t.Name, err)
	}
	var spans int64
	backfill := func(parts []Partition) error {
		for _, p := range parts {
			if !p.Attached {
				continue // being archived: its spans are not needed
			}
			n, err := h.backfillPartition(ctx, t, p)
			spans += n
			if errors.Is(err, errSpansConflict) {
				return h.abandonUpgrade(ctx, t, err)
			}
			if err != nil {
				return classify(op, t.Name, err)
			}
		}
		return nil
	}
	if err := backfill(parts); err != nil {
		return err
	}
	h.upgradeStep("backfilled")
	for attempt := 1; ; attempt++ {
		missing, err := h.finishUpgrade(ctx, t)
		if err != nil {
			return err
		}
		if len(missing) == 0 {
			break
		}
		if attempt == upgradeAttempts {
			return &series.Error{Kind: series.Unavailable, Op: op, Table: t.Name,
				Err: fmt.Errorf("%w: partitions keep appearing without the statement triggers", ErrDeferred)}
		}
		// Made meanwhile by a process that does not add them.
		for _, p := range missing {
			err := h.bounded(ctx, op, t.Name, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, `LOCK TABLE `+h.ident(p.Name)+` IN SHARE ROW EXCLUSIVE MODE`); err != nil {
					return err
				}
				for _, s := range orReplace(h.triggerDDL(t, h.ident(p.Name), p.Name)) {
					if _, err := tx.Exec(ctx, s); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		if err := backfill(missing); err != nil {
			return err
		}
	}
	h.log.Info("hot: table upgraded", "table", t.Name, "integrity", series.IntegrityStatement,
		"spans", spans, "took", time.Since(start).Round(time.Millisecond))
	h.dropExclusions(ctx, t)
	return nil
}

// backfillPartition records the spans of the stored rows of partition p
// of t in batches of about upgradeBatchRows rows, by market location and
// OBIS code, each in a transaction of its own; it returns how many spans
// it recorded.
func (h *Tier) backfillPartition(ctx context.Context, t *series.Table, p Partition) (int64, error) {
	parent := h.ident(t.Name)
	within := `"from" >= $1 AND "from" < $2 AND (malo_id, obis_code) > ($3, $4)`
	next := `SELECT malo_id, obis_code FROM ` + parent + ` WHERE ` + within + `
ORDER BY malo_id, obis_code OFFSET $5 LIMIT 1`
	batch := upgradeBatchRows
	if h.upgradeBatch > 0 {
		batch = h.upgradeBatch
	}
	cols := h.spanSourceColumns(t, "")
	var total int64
	loMaLo, loOBIS := "", "" // below every key
	for {
		var hiMaLo, hiOBIS string
		last := false
		err := h.pool.QueryRow(ctx, next, p.From, p.To, loMaLo, loOBIS, batch).Scan(&hiMaLo, &hiOBIS)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			last = true
		case err != nil:
			return total, err
		}
		source := `SELECT ` + cols + ` FROM ` + parent + ` WHERE ` + within
		args := []any{p.From, p.To, loMaLo, loOBIS}
		if !last {
			source += ` AND (malo_id, obis_code) <= ($5, $6)`
			args = append(args, hiMaLo, hiOBIS)
		}
		err = h.bounded(ctx, "ensure", t.Name, func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, h.spansSQL(t, source), args...)
			if err != nil {
				return err
			}
			total += tag.RowsAffected()
			h.upgradeStep("batch")
			return nil
		})
		if err == nil {
			h.upgradeStep("batched")
		}
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23P01" {
			return total, fmt.Errorf("%w (%s)", errSpansConflict, pgErr.Detail)
		}
		if err != nil || last {
			return total, err
		}
		loMaLo, loOBIS = hiMaLo, hiOBIS
	}
}

// finishUpgrade is phase 3: the check function in its final form and the
// definition recorded as IntegrityStatement, in a transaction that takes
// no lock a reader or writer of t's rows takes. It returns, and changes
// nothing for, the attached partitions that lack the statement triggers.
func (h *Tier) finishUpgrade(ctx context.Context, t *series.Table) (missing []Partition, err error) {
	err = h.bounded(ctx, "ensure", t.Name, func(tx pgx.Tx) error {
		missing = nil
		// As Ensure: no declaration of another process interleaves.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, 0)`, h.lockKey(metaTable)); err != nil {
			return err
		}
		// No partition is created meanwhile.
		if err := h.lockDDL(ctx, tx, t); err != nil {
			return err
		}
		parts, err := h.partitions(ctx, tx, t)
		if err != nil {
			return err
		}
		for _, p := range parts {
			var ok bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass($1) AND tgname = $2)`,
				h.ident(p.Name), p.Name+"_rows").Scan(&ok); err != nil {
				return err
			}
			if p.Attached && !ok {
				missing = append(missing, p)
			}
		}
		if len(missing) > 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, h.checkFuncDDL(t, layoutRows)); err != nil {
			return err
		}
		var stored []byte
		if err := tx.QueryRow(ctx, `SELECT definition FROM `+h.ident(metaTable)+` WHERE name = $1`, t.Name).Scan(&stored); err != nil {
			return err
		}
		var d definition
		if err := json.Unmarshal(stored, &d); err != nil {
			return &series.Error{Kind: series.InvariantViolation, Op: "ensure", Table: t.Name, Err: fmt.Errorf("stored definition: %w", err)}
		}
		d = d.normalize()
		d.Integrity = series.IntegrityStatement.String()
		def, _ := json.Marshal(d)
		_, err = tx.Exec(ctx, `UPDATE `+h.ident(metaTable)+` SET definition = $2 WHERE name = $1`, t.Name, def)
		return err
	})
	return missing, err
}

// dropExclusions drops the GiST exclusion constraints of t's attached
// partitions, which a table of IntegrityStatement does without, each
// partition in a transaction of its own. One whose lock does not come
// within upgradeLockWait, tried upgradeAttempts times, stays until the
// next Ensure: it enforces what the ownership relation does, at a cost
// to writes.
func (h *Tier) dropExclusions(ctx context.Context, t *series.Table) {
	rows, err := h.pool.Query(ctx, `
SELECT c.relname, array_agg(x.conname ORDER BY x.conname)
FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid
JOIN pg_constraint x ON x.conrelid = c.oid AND x.contype = 'x'
WHERE i.inhparent = to_regclass($1) AND x.conname IN (c.relname || '_operator', c.relname || '_overlap')
GROUP BY c.relname ORDER BY c.relname`, h.ident(t.Name))
	if err != nil {
		h.log.Warn("hot: exclusion constraints not listed", "table", t.Name, "err", err)
		return
	}
	type part struct {
		name  string
		drops []string
	}
	parts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (part, error) {
		var p part
		return p, r.Scan(&p.name, &p.drops)
	})
	if err != nil {
		h.log.Warn("hot: exclusion constraints not listed", "table", t.Name, "err", err)
		return
	}
	left := 0
	for _, p := range parts {
		var err error
		for range upgradeAttempts {
			err = h.bounded(ctx, "ensure", t.Name, func(tx pgx.Tx) error {
				for _, c := range p.drops {
					if _, err := tx.Exec(ctx, `ALTER TABLE `+h.ident(p.name)+` DROP CONSTRAINT IF EXISTS `+quote(c)); err != nil {
						return err
					}
				}
				return nil
			})
			if !errors.Is(err, ErrDeferred) {
				break
			}
		}
		if err != nil {
			left++
			h.log.Warn("hot: exclusion constraints kept until the next declaration", "table", t.Name, "partition", p.name, "err", err)
		}
	}
	if len(parts) > 0 {
		h.log.Info("hot: exclusion constraints dropped", "table", t.Name, "partitions", len(parts)-left, "left", left)
	}
}

// abandonUpgrade undoes phase 1 after the backfill found cause, two
// network operators among the stored rows: the triggers, the ownership
// relation and the check function go, and t is as it was before. It
// returns the refusal.
func (h *Tier) abandonUpgrade(ctx context.Context, t *series.Table, cause error) error {
	refusal := &series.Error{Kind: series.InvariantViolation, Op: "ensure", Table: t.Name,
		Err: fmt.Errorf("upgrade to integrity statement refused: %w", cause)}
	var err error
	for range upgradeAttempts {
		err = h.bounded(ctx, "ensure", t.Name, func(tx pgx.Tx) error {
			if err := h.lockForUpgrade(ctx, tx, t, "ACCESS EXCLUSIVE"); err != nil {
				return err
			}
			parts, err := h.partitions(ctx, tx, t)
			if err != nil {
				return err
			}
			rels := map[string]string{t.Name: h.ident(t.Name)}
			for _, p := range parts {
				rels[p.Name] = h.ident(p.Name)
			}
			for name, rel := range rels {
				for _, s := range []string{name + "_rows", name + "_immutable"} {
					if _, err := tx.Exec(ctx, `DROP TRIGGER IF EXISTS `+quote(s)+` ON `+rel); err != nil {
						return err
					}
				}
			}
			for _, s := range []string{`DROP TABLE IF EXISTS ` + h.ident(ownersName(t)), `DROP FUNCTION IF EXISTS ` + h.ident(checkFunc(t)) + `()`} {
				if _, err := tx.Exec(ctx, s); err != nil {
					return err
				}
			}
			return nil
		})
		if !errors.Is(err, ErrDeferred) {
			break
		}
	}
	if err != nil {
		// The triggers stay and keep enforcing the rules; the next
		// declaration with integrity statement meets the same refusal.
		h.log.Warn("hot: refused upgrade not undone", "table", t.Name, "err", err)
		return errors.Join(refusal, err)
	}
	h.log.Info("hot: upgrade to integrity statement refused and undone", "table", t.Name, "err", cause)
	return refusal
}

// lockForUpgrade takes, in tx, the DDL lock of t's partitions and mode on
// its parent and every partition, waiting at most upgradeLockWait in all;
// a wait that ends is an Unavailable error wrapping ErrDeferred.
func (h *Tier) lockForUpgrade(ctx context.Context, tx pgx.Tx, t *series.Table, mode string) error {
	wait := h.upgradeWait().Milliseconds()
	// A LOCK of the parent locks the partitions one by one, each wait
	// bounded by lock_timeout; the statement timeout bounds their sum.
	var prevLock, prevStmt string
	if err := tx.QueryRow(ctx, `SELECT current_setting('lock_timeout'), current_setting('statement_timeout')`).Scan(&prevLock, &prevStmt); err != nil {
		return err
	}
	set := func(lock, stmt string) error {
		_, err := tx.Exec(ctx, `SELECT set_config('lock_timeout', $1, true), set_config('statement_timeout', $2, true)`, lock, stmt)
		return err
	}
	if err := set(fmt.Sprint(wait), fmt.Sprint(wait)); err != nil {
		return err
	}
	err := h.lockDDL(ctx, tx, t)
	if err == nil {
		_, err = tx.Exec(ctx, `LOCK TABLE `+h.ident(t.Name)+` IN `+mode+` MODE`)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "55P03" || pgErr.Code == "57014" && ctx.Err() == nil) {
		h.log.Info("hot: upgrade deferred by a held lock", "table", t.Name, "wait", h.upgradeWait())
		return &series.Error{Kind: series.Unavailable, Op: "ensure", Table: t.Name, Err: fmt.Errorf("%w: %w", ErrDeferred, err)}
	}
	if err != nil {
		return err
	}
	return set(prevLock, prevStmt)
}

// upgradeWait returns the longest wait for a lock of an upgrade.
func (h *Tier) upgradeWait() time.Duration {
	if h.lockTimeout > 0 && h.lockTimeout < upgradeLockWait {
		return h.lockTimeout
	}
	return upgradeLockWait
}

// bounded runs fn in a transaction as ddl does, with every lock waited
// for at most upgradeWait.
func (h *Tier) bounded(ctx context.Context, op, table string, fn func(tx pgx.Tx) error) error {
	return h.ddl(ctx, op, table, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", h.upgradeWait().Milliseconds())); err != nil {
			return err
		}
		return fn(tx)
	})
}

// recordsSpans reports whether t's parent has the statement trigger that
// records the spans of new rows: t is of IntegrityStatement, or an upgrade
// to it has begun.
func (h *Tier) recordsSpans(ctx context.Context, q querier, t *series.Table) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass($1) AND tgname = $2)`,
		h.ident(t.Name), t.Name+"_rows").Scan(&ok)
	return ok, err
}

// orReplace turns CREATE TRIGGER statements into CREATE OR REPLACE
// TRIGGER, so that an upgrade resumed adds the triggers it lacks.
func orReplace(stmts []string) []string {
	out := make([]string, len(stmts))
	for i, s := range stmts {
		out[i] = "CREATE OR REPLACE TRIGGER " + s[len("CREATE TRIGGER "):]
	}
	return out
}

// upgradeStep calls the test hook, if set, at a step of an upgrade:
// "begun" (phase 1 committed), "batch" (in a backfill transaction, its
// spans inserted), "batched" (after its commit) and "backfilled".
func (h *Tier) upgradeStep(step string) {
	if h.onUpgradeStep != nil {
		h.onUpgradeStep(step)
	}
}

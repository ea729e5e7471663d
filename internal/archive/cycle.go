package archive

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/series"
)

// Cycle archives the windows of t due at now, at most
// Config.MaxWindowsPerCycle of them, into ct, then drops the detached
// partitions whose reader grace has passed, and checks that no attached
// partition lies below the watermark. A detached partition above the
// watermark is resumed only when the ledger records that an archival
// detached it; any other is reported in Violations, and no window reaches
// past its start.
//
// LeaseContended and Deferred are outcomes, not errors. An error comes
// with Status Failed, or Quarantined for a *cold.QuarantineError; an
// *InvariantError also lists its violation in the outcome.
//
// Under the table's lease, a cycle runs its steps in order: start (the
// drift check, the watermark against the ledger, the fence), windows (each
// due window archived) and check (stray and attached partitions,
// reclaiming those past their reader grace).
func (a *Archiver) Cycle(ctx context.Context, t *series.Table, ct *cold.Table, now time.Time) (Outcome, error) {
	c := &cycle{a: a, t: t, ct: ct, now: now, out: Outcome{Table: t.Name, Status: NothingDue}}
	if err := a.cfg.ValidateFor(t.Width); err != nil {
		return c.fail(err)
	}
	l, err := acquireLease(ctx, a.pool, a.hot.Schema(), t.Name)
	if err != nil {
		return c.fail(err)
	}
	if l == nil {
		c.out.Status = LeaseContended
		return c.out, nil
	}
	defer l.release(ctx)

	if done, err := c.start(ctx); done || err != nil {
		return c.end(err)
	}
	if err := c.windows(ctx); err != nil {
		return c.end(err)
	}
	c.rollup(ctx)
	if err := c.check(ctx); err != nil {
		return c.fail(err)
	}
	return c.out, nil
}

// A cycle is one run of Cycle over one table: the outcome so far, and
// what its steps hand on to one another.
type cycle struct {
	a   *Archiver
	t   *series.Table
	ct  *cold.Table
	now time.Time
	out Outcome
	// w is where the next window starts: W, or without one the first
	// partition's start; hasW says whether the catalog holds a W.
	w    time.Time
	hasW bool
	// parts are the table's partitions, as last listed.
	parts []hot.Partition
	// resume holds the starts of the detached partitions a previous
	// cycle did not commit (resumable).
	resume map[int64]bool
	// archived holds the starts of the partitions this cycle archived.
	archived map[int64]bool
}

// fail ends the cycle as Failed with err, listing the violation of an
// *InvariantError.
func (c *cycle) fail(err error) (Outcome, error) {
	c.out.Status = Failed
	var inv *InvariantError
	if errors.As(err, &inv) {
		c.out.Violations = append(c.out.Violations, inv.Reason)
	}
	return c.out, err
}

// end ends the cycle where a step stopped it: with the outcome its status
// says when err is nil or a quarantine (the step set Quarantined), as a
// failure otherwise.
func (c *cycle) end(err error) (Outcome, error) {
	if err == nil || c.out.Status == Quarantined {
		return c.out, err
	}
	return c.fail(err)
}

// start checks the cold schema for drift, reads W and holds it against
// the ledger, fences the table at W and finds where the first window
// starts. done is set when the cycle ends there: the fence deferred, or
// a table with neither W nor a partition, which has nothing to archive
// and nothing to check.
func (c *cycle) start(ctx context.Context) (done bool, err error) {
	a, t := c.a, c.t
	if err := a.cold.CheckDrift(ctx, t); err != nil {
		var q *cold.QuarantineError
		if cold.Unreachable(err) {
			// A warehouse that is away is no drift: it fails this cycle,
			// and the next one tries again.
			return false, cold.Unavailable("archive", t.Name, fmt.Errorf("archive %s: %w", t.Name, err))
		}
		if errors.As(err, &q) {
			c.out.Status = Quarantined
			return false, err
		}
		return false, fmt.Errorf("archive %s: %w", t.Name, err)
	}
	if err := a.ledger.ensure(ctx); err != nil {
		return false, ledgerFailed(t.Name, err)
	}
	if c.w, c.hasW, err = a.cold.Watermark(ctx, c.ct); err != nil {
		return false, cold.Unavailable("archive", t.Name, fmt.Errorf("archive %s: %w", t.Name, err))
	}
	// A log that lost its newest entries would have this cycle archive
	// again what is archived, or drop partitions it never committed.
	if err := a.CheckWatermark(ctx, t.Name, c.w, c.hasW); err != nil {
		return false, err
	}
	if c.hasW {
		if err := a.ledger.committedW(ctx, t.Name, c.w, c.now); err != nil {
			return false, ledgerFailed(t.Name, err)
		}
	}
	c.parts, err = a.fenceAt(ctx, t, c.w, c.hasW)
	if errors.Is(err, hot.ErrDeferred) {
		c.out.Status = Deferred
		return true, nil
	}
	if err != nil {
		return false, err
	}
	switch {
	case c.hasW:
		c.out.Watermark = c.w
		if !t.Width.Start(c.w).Equal(c.w) {
			return false, &InvariantError{Table: t.Name, Reason: fmt.Sprintf("watermark %s is not a %s partition boundary", cold.FormatTime(c.w), t.Width)}
		}
		if c.now.Before(c.w) {
			return false, fmt.Errorf("archive %s: %w: %s is before the watermark %s, where the newest archived window ends",
				t.Name, ErrNowOutOfRange, c.now.UTC().Format(time.RFC3339Nano), c.w.UTC().Format(time.RFC3339Nano))
		}
	case len(c.parts) == 0:
		return true, nil // not started: nothing to archive, nothing to check
	default:
		c.w = c.parts[0].From // nothing archived: the first window starts with the first partition
	}
	recs, err := a.ledger.records(ctx, t.Name)
	if err != nil {
		return false, ledgerFailed(t.Name, err)
	}
	c.resume = resumable(recs)
	return false, nil
}

// windows archives the windows due, one after another, at most
// Config.MaxWindows of them; a detach that does not get its lock in time
// defers the rest to a later cycle.
func (c *cycle) windows(ctx context.Context) error {
	c.archived = make(map[int64]bool)
	for range c.a.cfg.MaxWindows() {
		win, ok := nextWindow(c.t.Width, c.w, c.parts, c.resume, c.a.cfg.Step, c.a.cfg.SettlementLag, c.now)
		if !ok {
			break
		}
		more, err := c.window(ctx, win)
		if err != nil {
			return err
		}
		if !more {
			break
		}
	}
	if len(c.out.Windows) == 0 && c.out.Status != Deferred {
		c.out.Status = NothingDue
	}
	return nil
}

// window archives win, and says whether the cycle may go on to the next.
// A partition that appeared in it meanwhile has it planned again, from
// the partitions the fence found.
func (c *cycle) window(ctx context.Context, win window) (more bool, err error) {
	a, t := c.a, c.t
	// No partition may appear in the window once W can move past it: the
	// fence raises the partition floor to the window's end, and a
	// partition created before it must be in the plan.
	a.crash("planned")
	fenced, err := a.hot.Fence(ctx, t, win.to)
	if errors.Is(err, hot.ErrDeferred) {
		c.out.Status = Deferred
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !samePartitions(within(fenced, win.from, win.to), win.parts) {
		a.log.Info("archive: a partition appeared in the window; planning it again", "table", t.Name,
			"from", win.from, "to", win.to)
		c.parts = fenced
		return true, nil
	}
	done, waiting, err := a.archive(ctx, t, c.ct, win, c.now)
	if done != nil {
		c.out.Windows = append(c.out.Windows, *done)
		c.out.Status = Archived
		c.w, c.out.Watermark = done.To, done.To
		for _, p := range win.parts {
			c.archived[p.From.Unix()] = true
		}
	}
	if err != nil {
		return false, err
	}
	if waiting != "" {
		c.out.Status, c.out.Waiting = Deferred, waiting
		return false, nil
	}
	if c.parts, err = a.hot.Partitions(ctx, t); err != nil {
		return false, err
	}
	return true, nil
}

// check looks at the partitions as the windows left them: a detached one
// that no archival recorded detaching, and attached ones below W, are
// violations, unless the cold tier holds an attached one's rows, as after
// a restore (reconcile); those past their reader grace are dropped
// (reclaim). Every violation is logged.
func (c *cycle) check(ctx context.Context) error {
	a, t, out := c.a, c.t, &c.out
	if len(out.Windows) > 0 || out.Status == Deferred {
		var err error
		if c.parts, err = a.hot.Partitions(ctx, t); err != nil {
			return err
		}
	}
	if p, ok := stray(c.w, c.parts, c.resume); ok {
		out.Violations = append(out.Violations, strayReason(p, formatW(out.Watermark, !out.Watermark.IsZero())))
	}
	if !out.Watermark.IsZero() {
		if err := a.reclaim(ctx, t, c.ct, out.Watermark, c.parts, c.archived, c.now, out); err != nil {
			return err
		}
		if err := a.reconcile(ctx, t, c.ct, out.Watermark, c.parts, c.now, out); err != nil {
			return err
		}
	}
	for _, v := range out.Violations {
		a.log.Error("archive: invariant violated", "table", t.Name, "violation", v)
	}
	return nil
}

// rollup catches the table's daily rollup up with what this cycle and the
// late corrections since the last one committed (see cold.CatchUpRollup).
// A rollup that cannot be written fails nothing: it stays behind, reads
// compute the days it lacks from the readings, and the next cycle tries
// again.
func (c *cycle) rollup(ctx context.Context) {
	if c.t.TimeModel != series.Interval {
		return
	}
	commit, err := c.a.cold.CatchUpRollup(ctx, c.ct)
	if err != nil {
		c.out.RollupErr = err.Error()
		c.a.log.Warn("archive: the daily rollup stays behind", "table", c.t.Name, "err", err)
		return
	}
	c.out.RollupSnapshot, c.out.RollupRows = commit.SnapshotID, commit.Rows
}

package archive

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/series"
)

// reclaim drops the detached partitions below w whose commit was confirmed
// at least the reader grace before now, except those archived by this cycle
// (archivedNow): no drop follows a commit directly, so there is only one
// place where a lock timeout can leave a state behind. A drop that cannot
// get its lock is skipped; keeping the partition longer costs only disk.
// After a drop the hot tier's companions give back the space of the
// dropped rows (hot.Tier.Compact); one whose lock does not come is tried
// again after the next drop.
func (a *Archiver) reclaim(ctx context.Context, t *series.Table, ct *cold.Table, w time.Time, parts []hot.Partition, archivedNow map[int64]bool, now time.Time, out *Outcome) error {
	recs, err := a.ledger.records(ctx, t.Name)
	if err != nil {
		return ledgerFailed(t.Name, err)
	}
	exists := make(map[int64]bool, len(parts))
	dropped := false
	for _, p := range parts {
		exists[p.From.Unix()] = true
		if p.Attached || p.To.After(w) || archivedNow[p.From.Unix()] {
			continue
		}
		rec, ok := recs[p.From.Unix()]
		switch {
		case ok && rec.violation != nil:
			out.Violations = append(out.Violations, fmt.Sprintf("partition %s kept: %s", p.Name, *rec.violation))
			continue
		case !ok || rec.archivedAt == nil:
			// A cycle died between its commit and the ledger.
			if err := a.confirm(ctx, t, ct, p, parts, recs, archivedNow, now); err != nil {
				var inv *InvariantError
				if !errors.As(err, &inv) {
					return err
				}
				out.Violations = append(out.Violations, inv.Reason)
			}
			continue // the grace runs from now
		case now.Sub(*rec.archivedAt) < a.cfg.ReaderGrace:
			continue
		}
		err := a.hot.Drop(ctx, t, p.From)
		if errors.Is(err, hot.ErrDeferred) {
			a.log.Info("archive: drop deferred", "table", t.Name, "partition", p.Name)
			continue
		}
		if err != nil {
			return fmt.Errorf("archive %s: %w", t.Name, err)
		}
		out.Dropped = append(out.Dropped, p.From)
		dropped = true
		a.crash("after-drop")
		if err := a.ledger.forget(ctx, t.Name, p.From); err != nil {
			return ledgerFailed(t.Name, err)
		}
		a.log.Info("archive: partition dropped", "table", t.Name, "partition", p.Name)
	}
	if dropped {
		if _, err := a.hot.Compact(ctx, t); err != nil {
			return fmt.Errorf("archive %s: %w", t.Name, err)
		}
	}
	// Records of partitions dropped by a cycle that died before forgetting
	// them, and of detach attempts below W that never happened.
	for start, rec := range recs {
		if !exists[start] && time.Unix(start, 0).Before(w) && rec.violation == nil {
			if err := a.ledger.forget(ctx, t.Name, time.Unix(start, 0).UTC()); err != nil {
				return ledgerFailed(t.Name, err)
			}
		}
	}
	return nil
}

// confirm checks a detached partition p that W covers but the ledger has
// no confirmed commit for: a cycle died after its commit landed. The
// snapshot that archived p's window says how many rows it committed; the
// detached partitions of that window, immutable and not yet dropped, must
// hold as many. Then the window is recorded as archived now, and its
// grace starts.
func (a *Archiver) confirm(ctx context.Context, t *series.Table, ct *cold.Table, p hot.Partition, parts []hot.Partition, recs map[int64]record, archivedNow map[int64]bool, now time.Time) error {
	ice, err := a.cold.Iceberg(ctx, ct)
	if err != nil {
		return cold.Unavailable("archive", t.Name, fmt.Errorf("archive %s: %w", t.Name, err))
	}
	var from, to time.Time
	var committed int64 = -1
	for _, s := range ice.Metadata().Snapshots() {
		if s.Summary == nil {
			continue
		}
		f, errF := time.Parse(time.RFC3339Nano, s.Summary.Properties[cold.SummaryArchivedFrom])
		u, errT := time.Parse(time.RFC3339Nano, s.Summary.Properties[cold.SummaryArchivedTo])
		n, errN := strconv.ParseInt(s.Summary.Properties[cold.SummaryRows], 10, 64)
		if errF == nil && errT == nil && errN == nil && !p.From.Before(f) && !p.To.After(u) {
			from, to, committed = f.UTC(), u.UTC(), n
			break
		}
	}
	win := within(parts, p.From, p.To)
	if committed >= 0 {
		win = nil
		for _, q := range within(parts, from, to) {
			if r, ok := recs[q.From.Unix()]; !q.Attached && (!ok || r.archivedAt == nil) {
				win = append(win, q)
			}
		}
	}
	counts, total, err := a.count(ctx, win)
	if err != nil {
		return fmt.Errorf("archive %s: %w", t.Name, err)
	}
	switch {
	case committed < 0:
		// Expired from the history: W covers the window, and W moves only
		// with the data below it, so the rows are there; the count is not
		// checkable any more.
		a.log.Warn("archive: commit of a detached partition not found in the snapshot history; keeping its count unchecked",
			"table", t.Name, "partition", p.Name)
	case committed != total:
		reason := fmt.Sprintf("window [%s, %s): committed %d rows, its detached partitions hold %d",
			cold.FormatTime(from), cold.FormatTime(to), committed, total)
		return a.violated(ctx, t, win, now, reason)
	}
	if err := a.ledger.archived(ctx, t.Name, starts(win), counts, now); err != nil {
		return ledgerFailed(t.Name, err)
	}
	for _, q := range win {
		recs[q.From.Unix()] = record{archivedAt: &now}
		archivedNow[q.From.Unix()] = true
	}
	a.log.Info("archive: commit confirmed after a restart", "table", t.Name, "partitions", len(win), "rows", total)
	return nil
}

package query

import (
	"context"
	"time"

	"github.com/meterstore/meterstore/series"
)

// W only grows (it rides in the commit, which refuses to move it back), so
// a range that ends at or below a W a read of the table split its tiers at
// before lies in the cold tier alone: its cold plan, whose W Source.Cold
// vets, is the whole read. Such a read skips reading W0 (a round trip to
// the log and the ledger) and opens no hot read.

// saw records w as a W the table's tiers were split at, if it is higher
// than the one recorded.
func (t *Table) saw(w time.Time) {
	for {
		old := t.seen.Load()
		if old != nil && !w.After(*old) {
			return
		}
		if t.seen.CompareAndSwap(old, &w) {
			return
		}
	}
}

// seenW returns the highest W recorded by saw, if any.
func (t *Table) seenW() (time.Time, bool) {
	if w := t.seen.Load(); w != nil {
		return *w, true
	}
	return time.Time{}, false
}

// belowSeen reads r from its cold plan alone where r ends at or below a W
// seen before. handled is false where it does not, or where the plan's W
// lies below the one seen (the log lost its newest commits, or the table
// was purged): the caller then reads the tiers as without one, which
// finds and reports what happened. A cold tier that fails is answered as
// attempt answers it (hotOnly).
func (e *reader) belowSeen(ctx context.Context, inst *instance, r series.Range, res *TableRead) (files fileSet, s split, hot *hotScan, handled bool, err error) {
	w, ok := e.seenW()
	if !ok || r.To.IsZero() || r.To.After(w) {
		return fileSet{}, split{}, nil, false, nil
	}
	begin := time.Now()
	pl, err := e.src.Cold(ctx, series.Range{From: r.From, To: r.To, MaLo: r.MaLo})
	res.Timing.Plan += time.Since(begin)
	res.Timing.step(StepColdPlan, begin)
	if err != nil {
		files, s, hot, err = e.hotOnly(ctx, inst, r, res, err)
		return files, s, hot, true, err
	}
	if !pl.HasWatermark || pl.Watermark.Before(w) {
		return fileSet{}, split{}, nil, false, nil
	}
	if err := checkLocal(pl.Files); err != nil {
		return fileSet{}, split{}, nil, true, err
	}
	e.saw(pl.Watermark)
	res.Snapshot, res.Tiers = pl.SnapshotID, []string{"cold"}
	res.Watermark, res.HasWatermark = pl.Watermark, true
	return filesOf(pl), split{w: pl.Watermark, hasW: true}, nil, true, nil
}

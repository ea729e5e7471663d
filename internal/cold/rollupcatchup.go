package cold

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/internal/rollup"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// CatchUpRollup brings the rollup of the interval table t up to t's
// current snapshot S: it computes the rows of every settled day (one that
// ends at or before S's watermark) that changed since the snapshot the
// rollup reflects, from S's rows, and appends them as rollup version S's
// sequence number, in one snapshot naming S and its watermark. A day
// changes when the watermark passes its end, or when a late correction
// (see SummaryLateFrom) falls in it; compactions and re-markings of
// files (SummaryCompacted, SummaryResettled) change none. Where the
// rollup reflects no ancestor of S, or a snapshot between does what this
// cannot tell (a late commit without its range, a foreign engine's
// append), every settled day is computed again. After one archival
// through this Tier and nothing else, it commits what the archival
// prepared from the rows it wrote (see prepareRollup) rather than read
// the window back.
// A rollup whose current snapshot lacks a column of the rollup's schema
// (one an earlier release wrote, see rollupAnswers) has the columns added
// and every settled day computed again, in a snapshot that replaces every
// file it had. It does nothing when the
// rollup reflects S already, and returns the zero Commit then.
//
// It runs after the commits it follows, never inside them: a crash
// between leaves the rollup behind, which a reader notices (RollupState)
// and the next call mends.
func (c *Tier) CatchUpRollup(ctx context.Context, t *Table) (Commit, error) {
	if t.decl.TimeModel != series.Interval {
		return Commit{}, nil
	}
	if prep, _ := c.archived.prepared.take(t); prep != nil {
		cm, ok, err := c.landRollup(ctx, t, prep)
		if err != nil || ok {
			return cm, err
		}
	}
	r, rice, err := c.ensureRollup(ctx, t)
	if err != nil {
		return Commit{}, err
	}
	ice, err := c.load(ctx, t)
	if err != nil {
		return Commit{}, err
	}
	snap := ice.CurrentSnapshot()
	w, ok, err := Watermark(ice.Metadata())
	if err != nil || !ok || snap == nil {
		return Commit{}, err
	}
	st, err := rollupState(rice.CurrentSnapshot())
	if err != nil {
		return Commit{}, err
	}
	// A rollup written without a column of the rollup's schema is
	// evolved and rewritten whole: every settled day, replacing its files.
	var replace []iceberg.DataFile
	if !rollupAnswers(&t.decl, rice, rice.CurrentSnapshot()) {
		if rice, err = c.evolveRollup(ctx, r, rice); err != nil {
			return Commit{}, err
		}
		if cur := rice.CurrentSnapshot(); cur != nil {
			ch, err := c.chainOf(ctx, r, rice, cur)
			if err != nil {
				return Commit{}, err
			}
			replace = ch.files
		}
		st = RollupState{}
	}
	if st.Ok && st.Source == snap.SnapshotID {
		return Commit{}, nil
	}
	ranges := changedSince(ice.Metadata(), snap, st, w)
	if c.rollupSkipsLate {
		ranges = ranges[:1]
	}
	var rows []rollup.Row
	done := map[rollup.Key]bool{}
	chunks, err := c.rollupChunks(ctx, t, ice, snap, ranges, w)
	if err != nil {
		return Commit{}, err
	}
	for _, q := range chunks {
		got, err := c.rollupOf(ctx, t, ice, q, w, snap.SequenceNumber)
		if err != nil {
			return Commit{}, err
		}
		// A day two ranges share is computed by each, alike: the first's
		// rows are kept.
		n := len(rows)
		for _, x := range got {
			if !done[x.KeyOf()] {
				rows = append(rows, x)
			}
		}
		for _, x := range rows[n:] {
			done[x.KeyOf()] = true
		}
	}
	return c.appendRollup(ctx, r, rice, rows, replace, snap.SnapshotID, FormatTime(w))
}

// changedSince returns the ranges of from whose settled days changed
// between the snapshot st reflects and snap, at watermark w: first the
// range the watermark moved over, then one per late commit.
func changedSince(meta table.Metadata, snap *table.Snapshot, st RollupState, w time.Time) []series.Range {
	all := []series.Range{{To: w}}
	if !st.Ok {
		return all
	}
	out := []series.Range{{From: st.Watermark, To: w}}
	for s := snap; s.SnapshotID != st.Source; {
		if s.Summary != nil && s.Summary.Operation != table.OpReplace {
			p := s.Summary.Properties
			_, late := p[SummaryLateRows]
			_, archived := p[SummaryArchivedFrom]
			_, compacted := p[SummaryCompacted]
			_, resettled := p[SummaryResettled]
			switch {
			case compacted || resettled:
				// Our rewrites of files: the same readings, the same winners.
			case late:
				lo, err1 := parseTime(p[SummaryLateFrom])
				hi, err2 := parseTime(p[SummaryLateTo])
				if err1 != nil || err2 != nil {
					return all
				}
				out = append(out, series.Range{From: lo, To: hi})
			case archived:
			case p["added-data-files"] != "" && p["added-data-files"] != "0":
				return all // what it added is not known here
			}
		}
		if s.ParentSnapshotID == nil {
			return all // st's snapshot is no ancestor: expired, or another history
		}
		if s = meta.SnapshotByID(*s.ParentSnapshotID); s == nil {
			return all
		}
	}
	return out
}

// rollupOf returns the rollup rows, of version v, of the settled days
// (ending at or before w) that overlap q, from the rows of the snapshot
// ice is at. It reads every such day whole.
func (c *Tier) rollupOf(ctx context.Context, t *Table, ice *table.Table, q series.Range, w time.Time, v int64) ([]rollup.Row, error) {
	scan := series.Range{To: w}
	if !q.From.IsZero() {
		// The earliest start of a balancing day, of any commodity, that
		// holds q.From: every day overlapping q begins there or later.
		scan.From = minTime(c.cal.DayStart(c.cal.BalancingDay(q.From, metering.Electricity)),
			c.cal.GasDayStart(c.cal.BalancingDay(q.From, metering.Gas)))
	}
	if !q.To.IsZero() && q.To.Before(w) {
		last := c.cal.BalancingDay(q.To.Add(-time.Microsecond), metering.Electricity)
		scan.To = minTime(w, c.cal.GasDayEnd(last))
	}
	if !scan.To.After(scan.From) && !scan.From.IsZero() {
		return nil, nil
	}
	b := rollup.NewBuilder(&t.decl, c.cal)
	for r, err := range c.scanColumns(ctx, t, ice, scan, rollup.Needs(&t.decl)) {
		if err != nil {
			return nil, fmt.Errorf("cold: rollup of %s: %w", t.decl.Name, err)
		}
		b.Add(&r)
	}
	var out []rollup.Row
	spans := newDaySpans(c.cal)
	for _, x := range b.Rows(v) {
		start, end := spans.of(x.Day, x.Commodity)
		overlaps := (q.From.IsZero() || end.After(q.From)) && (q.To.IsZero() || start.Before(q.To))
		if overlaps && !end.After(w) && (scan.From.IsZero() || !start.Before(scan.From)) {
			out = append(out, x)
		}
	}
	return out, nil
}

// rollupChunkDays bounds the days one scan of a catch-up reads, and so the
// readings it holds at once: the rows it computes are kept, one a series'
// day.
const rollupChunkDays = 7

// rollupChunks splits ranges into ranges of at most rollupChunkDays days
// each, a range open below starting at the earliest "from" of snap's data
// files, by their bounds.
func (c *Tier) rollupChunks(ctx context.Context, t *Table, ice *table.Table, snap *table.Snapshot, ranges []series.Range, w time.Time) ([]series.Range, error) {
	var out []series.Range
	for _, q := range ranges {
		if q.From.IsZero() {
			lo, ok, err := c.earliestFrom(ctx, t, ice, snap)
			if err != nil {
				return nil, err
			}
			if !ok {
				out = append(out, q) // no bounds to start from: one scan
				continue
			}
			q.From = lo
		}
		if q.To.IsZero() || q.To.After(w) {
			q.To = w
		}
		for from := q.From; from.Before(q.To); {
			to := minTime(q.To, from.Add(rollupChunkDays*24*time.Hour))
			out = append(out, series.Range{From: from, To: to})
			from = to
		}
	}
	return out, nil
}

// earliestFrom returns the lowest "from" of snap's data files, by their
// lower bounds; ok is false if it has none, or a file says nothing.
func (c *Tier) earliestFrom(ctx context.Context, t *Table, ice *table.Table, snap *table.Snapshot) (time.Time, bool, error) {
	ch, err := c.chainOf(ctx, t, ice, snap)
	if err != nil {
		return time.Time{}, false, err
	}
	f, ok := ice.Schema().FindFieldByName("from")
	if !ok {
		return time.Time{}, false, nil
	}
	var lo int64
	found := false
	for _, df := range ch.files {
		b, ok := df.LowerBoundValues()[f.ID]
		if !ok || len(b) != 8 {
			return time.Time{}, false, nil
		}
		us := int64(binary.LittleEndian.Uint64(b))
		if !found || us < lo {
			lo, found = us, true
		}
	}
	return time.UnixMicro(lo).UTC(), found, nil
}

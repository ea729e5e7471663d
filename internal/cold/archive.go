package cold

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/meterstore/meterstore/internal/rollup"
	"github.com/meterstore/meterstore/series"
)

// Archive appends rows, the readings of the window [from, to), to t as one
// snapshot that moves the watermark to w: the data and the boundary they
// sit below land in the same compare-and-set, or neither does. rows is read
// once, in batches, so memory is bounded by the batch and row group sizes
// and the partitions the window touches (a file open in each), not by the
// window's rows. An empty window is a snapshot without files that moves W
// all the same.
//
// Rows must come as the hot tier scans the window's partitions: partition
// by partition, each in primary key order, so that the versions of a merge
// key are adjacent and ascending; rows in key order make whole files
// sorted. A reading is marked superseded in the column of that name when
// the next one shares its merge key, and the marked ones are written to
// files of their own (the column partitions the table), so that a resolved
// read skips them without comparing versions (see Plan.Kinds). Rows out of
// that order are refused.
//
// Archive refuses a window that starts below the current watermark
// (ErrWindowArchived), a watermark before the current one
// (ErrWatermarkBackwards), a reading outside the window or not fit for the
// tier (a *hot.Error naming it), and a quarantined table (*QuarantineError).
// When the commit fails, the files it wrote are deleted unless it may still
// land.
func (c *Tier) Archive(ctx context.Context, t *Table, w, from, to time.Time, rows Rows) (Commit, error) {
	const op = "archive"
	for _, x := range []struct {
		what string
		t    time.Time
	}{{"watermark", w}, {"window start", from}, {"window end", to}} {
		if err := checkPrecision(x.what, x.t); err != nil {
			return Commit{}, err
		}
	}
	if !from.Before(to) || to.After(w) {
		return Commit{}, fmt.Errorf("cold: archive %s: window [%s, %s) under watermark %s: want from < to <= watermark",
			t.decl.Name, FormatTime(from), FormatTime(to), FormatTime(w))
	}
	ice, err := c.load(ctx, t)
	if err != nil {
		return Commit{}, err
	}
	if ice, err = c.prepare(ctx, t, ice); err != nil {
		return Commit{}, err
	}
	// The commit check refuses both of these too, atomically; checking
	// first saves writing files that could not be committed.
	cur, ok, err := Watermark(ice.Metadata())
	switch {
	case err != nil:
		return Commit{}, fmt.Errorf("cold: archive %s: %w", t.decl.Name, err)
	case ok && w.Before(cur):
		return Commit{}, fmt.Errorf("cold: archive %s: %w: from %s to %s", t.decl.Name, ErrWatermarkBackwards, FormatTime(cur), FormatTime(w))
	case ok && from.Before(cur):
		return Commit{}, fmt.Errorf("cold: archive %s: %w: window from %s, watermark %s", t.decl.Name, ErrWindowArchived, FormatTime(from), FormatTime(cur))
	}
	enc, err := newEncoder(&t.decl, c.cal, op, ice.Schema(), c.opts.BatchRows)
	if err != nil {
		return Commit{}, err
	}
	enc.mark, enc.order = true, newKeyOrder(&t.decl)
	var finish func(Commit, error) *rollupPrep
	if t.decl.TimeModel == series.Interval && !c.rollupReadsBack {
		sums := rollup.NewStream(&t.decl, c.cal)
		passed := make(chan struct{})
		enc.sums, enc.summed = sums, sync.OnceFunc(func() { close(passed) })
		finish = c.prepareRollup(ctx, t, ice, sums, passed, w)
	}
	cm, err := c.commit(ctx, t, ice, write{
		op:   op,
		enc:  enc,
		rows: rows,
		check: func(r *series.Reading) string {
			if r.From.Before(from) || !r.From.Before(to) {
				return fmt.Sprintf("from %s is outside the window [%s, %s)", FormatTime(r.From), FormatTime(from), FormatTime(to))
			}
			return ""
		},
		summary: iceberg.Properties{
			SummaryWatermark:    FormatTime(w),
			SummaryArchivedFrom: FormatTime(from),
			SummaryArchivedTo:   FormatTime(to),
		},
		rowsKey: SummaryRows,
	})
	if finish != nil {
		prep := finish(cm, err)
		if err == nil {
			// A prep the next archival landed over is stale: no catch-up
			// ran between the two.
			if old, ok := c.archived.prepared.swap(t, prep); ok && old != nil {
				_ = c.abandon(old.r, old.p, errors.New("cold: superseded by a later archival"))
			}
		}
	}
	return cm, err
}

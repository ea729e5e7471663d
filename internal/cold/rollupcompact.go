package cold

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/internal/rollup"
	"github.com/meterstore/meterstore/series"
)

// A RollupCompaction reports what CompactRollup did; SnapshotID 0 says it
// committed nothing.
type RollupCompaction struct {
	SnapshotID              int64
	FilesBefore, FilesAfter int
	RowsBefore, RowsAfter   int64 // rows of every rollup version, and those kept
}

// CompactRollup rewrites the data files of the daily rollup of the
// interval table t, one a catch-up, as one file a month, keeping of each
// series' day only the rows of its highest rollup version (the rows that
// hold, see rollup.Current), and merges its manifests, in one snapshot
// that reflects what the one it replaces reflects. A read of the current
// rollup answers the same after it; reads as of a source snapshot the
// rollup reflected before read the rollup snapshots of then, which keep
// their files until expiry. It does nothing unless a month holds
// minFiles files (at least 2), nor to a rollup whose current snapshot
// lacks a column of its schema (see rollupAnswers). A catch-up committed
// meanwhile makes it fail with ErrCompactionConflict.
func (c *Tier) CompactRollup(ctx context.Context, t *Table, minFiles int) (RollupCompaction, error) {
	var out RollupCompaction
	if t.decl.TimeModel != series.Interval {
		return out, nil
	}
	r := c.RollupHandle(t)
	ice, err := c.load(ctx, r)
	if errors.Is(err, icecatalog.ErrNoSuchTable) || errors.Is(err, icecatalog.ErrNoSuchNamespace) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	snap := ice.CurrentSnapshot()
	if snap == nil || !rollupAnswers(&t.decl, ice, snap) {
		// A rollup without a column of its schema is the catch-up's to
		// rewrite whole: its rows rewritten here would read as zeros.
		return out, nil
	}
	ch, err := c.chainOf(ctx, r, ice, snap)
	if err != nil {
		return out, err
	}
	out.FilesBefore, out.FilesAfter = len(ch.files), len(ch.files)
	perMonth, most := map[string]int{}, 0
	for _, f := range ch.files {
		k := fmt.Sprint(f.Partition())
		perMonth[k]++
		most = max(most, perMonth[k])
	}
	if most < max(minFiles, 2) {
		return out, nil
	}
	rows, st, err := c.rollupRowsOf(ctx, r, ice, series.Range{})
	if err != nil || !st.Ok {
		return out, err
	}
	keep := rollup.Current(rows)
	out.RowsBefore = int64(len(rows))
	asc, err := table.SchemaToArrowSchema(ice.Schema(), nil, true, false)
	if err != nil {
		return out, fmt.Errorf("cold: compact the rollup %s: %w", r.decl.Name, err)
	}
	done, err := c.commit(ctx, r, ice, write{
		op:      "compact",
		records: []*records{{schema: asc, batches: rollupBatches(&r.decl, c.cal, asc, keep, max(c.opts.BatchRows, 1))}},
		replace: ch.files,
		merge:   true,
		pin:     true, // the rows kept are those of this snapshot only
		summary: iceberg.Properties{
			rollup.SummarySourceSnapshot: strconv.FormatInt(st.Source, 10),
			rollup.SummaryWatermark:      FormatTime(st.Watermark),
			SummaryCompacted:             strconv.Itoa(len(ch.files)),
		},
	})
	if errors.Is(err, table.ErrCommitFailed) {
		err = fmt.Errorf("%w: %w", ErrCompactionConflict, err)
	}
	if err != nil {
		return RollupCompaction{}, err
	}
	out.SnapshotID, out.FilesAfter, out.RowsAfter = done.SnapshotID, done.Files, done.Rows
	return out, nil
}

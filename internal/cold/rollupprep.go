package cold

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/internal/rollup"
)

// An archival prepares the rollup commit that its catch-up lands, beside
// its own work: while it writes its data files, the rollup table is
// loaded and its current snapshot's chain proven; once its rows have
// passed, their sums become rollup rows written as the rollup's data file
// while the archival's own commit is staged and committed. The catch-up
// then only stages and commits, if the archival landed as prepared for:
// on the snapshot the rollup reflects, with the sequence number the rows
// carry. Otherwise the prepared files are deleted and the catch-up reads
// as it would have without. A crash between leaves the rollup behind and
// its prepared files unreferenced, as a crash inside its commit would.

// A rollupPrep is a rollup commit an archival prepared.
type rollupPrep struct {
	r      *Table
	p      *pending // the rollup's data files, written
	parent int64    // the source snapshot the archival was written on
	seq    int64    // the archival's sequence number, if it lands at once: the rows' version
	w      time.Time
	next   rollupCarry // without its snapshot: the archival's
	// archival is the archival's snapshot, once it landed.
	archival int64
}

// prepareRollup starts preparing the rollup commit of the archival of t,
// on ice, that moves the watermark to w and sums its rows into sums.
// passed is closed once they all passed; finish, called with the
// archival's outcome, waits for the preparation and returns it, nil if
// there is none.
func (c *Tier) prepareRollup(ctx context.Context, t *Table, ice *table.Table, sums *rollup.Stream, passed <-chan struct{}, w time.Time) (finish func(Commit, error) *rollupPrep) {
	ctx, cancel := context.WithCancel(ctx)
	var (
		wg      sync.WaitGroup
		out     *rollupPrep
		failed  error
		settled = make(chan struct{}) // the archival's commit returned
		landed  bool
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		out, failed = c.prepRollup(ctx, t, ice, sums, passed, settled, &landed, w)
	}()
	return func(cm Commit, err error) *rollupPrep {
		landed = err == nil
		if !landed {
			cancel()
		}
		close(settled)
		wg.Wait()
		cancel()
		if failed != nil {
			c.log.Debug("cold: the rollup commit was not prepared", "table", t.decl.Name, "err", failed)
		}
		if out == nil {
			return nil
		}
		if !landed {
			_ = c.abandon(out.r, out.p, err)
			return nil
		}
		out.archival = cm.SnapshotID
		return out
	}
}

// prepRollup is the preparation prepareRollup starts. It returns nil, and
// leaves no file, where the archival's sums cannot make the rollup commit.
func (c *Tier) prepRollup(ctx context.Context, t *Table, ice *table.Table, sums *rollup.Stream, passed, settled <-chan struct{}, landed *bool, w time.Time) (*rollupPrep, error) {
	carry, carried := c.archived.carry.take(t)
	base := ice.CurrentSnapshot()
	if base == nil {
		return nil, nil
	}
	r, rice, err := c.ensureRollup(ctx, t)
	if err != nil {
		return nil, err
	}
	st, err := rollupState(rice.CurrentSnapshot())
	if err != nil || !st.Ok || st.Source != base.SnapshotID || !rollupAnswers(&t.decl, rice, rice.CurrentSnapshot()) {
		return nil, err // a rollup to rewrite whole is the catch-up's
	}
	fs, err := rice.FS(ctx)
	if err != nil {
		return nil, err
	}
	proven, err := readChain(ctx, fs, r.decl.Name, rice.Metadata(), rice.CurrentSnapshot(), &c.chains.memo)
	if err != nil {
		return nil, err
	}
	select {
	case <-passed:
	case <-settled:
		// The rows did not all pass (or the commit returned first): the
		// sums hold what was written only if the commit landed.
		if !*landed {
			return nil, nil
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	seq := ice.Metadata().LastSequenceNumber() + 1
	rows, next, ok, err := c.rowsFromSums(ctx, t, ice, sums, carry, carried, st, w, seq)
	if err != nil || !ok {
		return nil, err
	}
	asc, err := table.SchemaToArrowSchema(rice.Schema(), nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("cold: rollup %s: %w", r.decl.Name, err)
	}
	rec := &records{schema: asc, batches: rollupBatches(&r.decl, c.cal, asc, rows, max(c.opts.BatchRows, 1))}
	p, err := c.writeData(ctx, r, rice, write{
		op:      "rollup",
		records: []*records{rec},
		summary: iceberg.Properties{rollup.SummaryWatermark: FormatTime(w)},
		rowsKey: SummaryRows,
		pin:     true, // a catch-up is computed against the rollup it read
	})
	if err != nil {
		return nil, err
	}
	p.base = proven
	return &rollupPrep{r: r, p: p, parent: base.SnapshotID, seq: seq, w: w, next: next}, nil
}

// landRollup commits the rollup prep prepared, if t's current snapshot
// is the archival it was prepared for; ok is false, and its files are
// deleted, if not, or if the rollup moved since.
func (c *Tier) landRollup(ctx context.Context, t *Table, prep *rollupPrep) (Commit, bool, error) {
	ice, err := c.load(ctx, t)
	if err != nil {
		return Commit{}, false, c.abandon(prep.r, prep.p, err)
	}
	snap := ice.CurrentSnapshot()
	w, ok, err := Watermark(ice.Metadata())
	if err != nil || !ok || snap == nil || snap.SnapshotID != prep.archival || snap.SequenceNumber != prep.seq || !w.Equal(prep.w) ||
		snap.ParentSnapshotID == nil || *snap.ParentSnapshotID != prep.parent {
		_ = c.abandon(prep.r, prep.p, errors.New("the archival did not land as prepared for"))
		return Commit{}, false, nil
	}
	cm, err := c.land(ctx, prep.r, prep.p, iceberg.Properties{rollup.SummarySourceSnapshot: strconv.FormatInt(snap.SnapshotID, 10)})
	if errors.Is(err, table.ErrCommitFailed) {
		return Commit{}, false, nil // another catch-up came first: see what it left
	}
	if err != nil {
		return Commit{}, false, err
	}
	prep.next.snapshot = snap.SnapshotID
	c.archived.carry.put(t, prep.next)
	c.rollupSummed.Add(1)
	return cm, true, nil
}

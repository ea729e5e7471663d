package cold

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/internal/rollup"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// An archival of an interval table sums the rows it writes into rollup
// rows as they pass (a rollup.Stream), so that the catch-up after it need
// not read the window back: only the part below the previous watermark of
// a day straddling it is read, by its day. The sums are kept here, the
// last archival's per table, until a catch-up takes them; a catch-up that
// finds none, or finds more changed than that archival (a crash between
// the two commits, late corrections, a snapshot of another writer), reads
// the readings back instead.

// archivedRollups holds, per table, the rollup sums of the last archival
// committed through this Tier, and the sums of the days its catch-up left
// unsettled.
type archivedRollups struct {
	sums  perTable[archivedRollup]
	carry perTable[rollupCarry]
}

// perTable holds one value per table until it is taken.
type perTable[T any] struct {
	mu sync.Mutex
	m  map[string]T
}

func (p *perTable[T]) put(t *Table, x T) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]T{}
	}
	p.m[strings.Join(t.ident, ".")] = x
}

// take returns and forgets t's value.
func (p *perTable[T]) take(t *Table) (T, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := strings.Join(t.ident, ".")
	x, ok := p.m[k]
	delete(p.m, k)
	return x, ok
}

// A rollupCarry is the sums of the readings of snapshot from lo up to its
// watermark, by day: the days a catch-up from an archival's sums left
// unsettled, which the next one completes without reading them back.
type rollupCarry struct {
	snapshot int64
	lo       time.Time
	rows     []rollup.Row
}

type archivedRollup struct {
	snapshot int64 // the archival's snapshot
	sums     *rollup.Stream
}

// summed returns rows, each added to s as it passes.
func summed(rows Rows, s *rollup.Stream) Rows {
	return func(yield func(series.Reading, error) bool) {
		for r, err := range rows {
			if err == nil {
				s.Add(&r)
			}
			if !yield(r, err) {
				return
			}
		}
	}
}

// rollupFromArchive returns the rollup rows, of version snap's sequence
// number, of the days that snap, an archival through this Tier, settled,
// from the sums it kept. ok is false, and nothing is read, unless that is
// all that changed since the snapshot st reflects: snap is the archival's,
// and its parent is st's.
func (c *Tier) rollupFromArchive(ctx context.Context, t *Table, ice *table.Table, snap *table.Snapshot, st RollupState, w time.Time) (rows []rollup.Row, ok bool, err error) {
	a, found := c.archived.sums.take(t)
	carry, carried := c.archived.carry.take(t)
	if !found || c.rollupReadsBack || a.snapshot != snap.SnapshotID || !st.Ok || snap.ParentSnapshotID == nil || *snap.ParentSnapshotID != st.Source {
		return nil, false, nil
	}
	prev := st.Watermark
	// Every reading at or above prev is the archival's; a day straddling
	// prev needs the readings below it too, from lo: carried from the last
	// catch-up if it summed them, else read.
	lo := prev
	for _, com := range rollupCommodities(&t.decl) {
		d := c.cal.BalancingDay(prev, com)
		if start := c.cal.BalancingDayStart(d, com); start.Before(prev) && !c.cal.BalancingDayEnd(d, com).After(w) {
			lo = minTime(lo, start)
		}
	}
	switch {
	case carried && carry.snapshot == st.Source && !lo.Before(carry.lo):
		// The last catch-up summed every reading from carry.lo to prev.
		a.sums.AddRows(carry.rows)
		lo = carry.lo
	case lo.Before(prev):
		b := rollup.NewBuilder(&t.decl, c.cal)
		for r, err := range c.scanColumns(ctx, t, ice, series.Range{From: lo, To: prev}, rollup.Needs(&t.decl)) {
			if err != nil {
				return nil, false, fmt.Errorf("cold: rollup of %s: %w", t.decl.Name, err)
			}
			b.Add(&r)
		}
		a.sums.AddBuilder(b)
	}
	next := rollupCarry{snapshot: snap.SnapshotID, lo: lo}
	for _, x := range a.sums.Rows(snap.SequenceNumber) {
		start, end := c.cal.BalancingDayStart(x.Day, x.Commodity), c.cal.BalancingDayEnd(x.Day, x.Commodity)
		switch {
		case end.After(w) && !start.Before(lo):
			next.rows = append(next.rows, x) // summed whole, so far
		case !end.After(prev) || end.After(w):
			// Settled before, or not yet.
		case start.Before(lo):
			// A day of a commodity the table does not declare, straddling
			// prev: its part below was not read.
			return nil, false, nil
		default:
			rows = append(rows, x)
		}
	}
	c.archived.carry.put(t, next)
	c.rollupSummed.Add(1)
	return rows, true, nil
}

// rollupCommodities returns the commodities whose days the readings of
// decl fall in: its own, or, when it declares none, those whose balancing
// days differ (the rest keep the calendar day, as electricity does).
func rollupCommodities(decl *series.Table) []metering.Commodity {
	if decl.Commodity != 0 {
		return []metering.Commodity{decl.Commodity}
	}
	return []metering.Commodity{metering.Electricity, metering.Gas}
}

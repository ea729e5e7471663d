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
// rows as they pass its checks (a rollup.Stream, see encoder.sums), so that the catch-up after it need
// not read the window back: only the part below the previous watermark of
// a day straddling it is read, by its day. The rollup commit they make is
// prepared beside the archival (see prepareRollup) and kept here, the
// last archival's per table, until a catch-up lands it; a catch-up that
// finds none, or finds more changed than that archival (a crash between
// the two commits, late corrections, a snapshot of another writer), reads
// the readings back instead.

// archivedRollups holds, per table, the rollup commit the last archival
// through this Tier prepared, and the sums of the days its catch-up left
// unsettled.
type archivedRollups struct {
	prepared perTable[*rollupPrep]
	carry    perTable[rollupCarry]
}

// perTable holds one value per table until it is taken.
type perTable[T any] struct {
	mu sync.Mutex
	m  map[string]T
}

func (p *perTable[T]) put(t *Table, x T) { p.swap(t, x) }

// swap puts x as t's value and returns the one it replaces.
func (p *perTable[T]) swap(t *Table, x T) (old T, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]T{}
	}
	k := strings.Join(t.ident, ".")
	old, ok = p.m[k]
	p.m[k] = x
	return old, ok
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

// rowsFromSums returns the rollup rows, of version v, of the days settled
// between st's watermark and w, from sums, the sums of every reading at
// or above st's watermark, and the readings below it of a day straddling
// it: from carry if that holds them (carried), else read from ice, which
// holds the same readings below st's watermark as st's source. It
// returns the carry of the days left unsettled, without its snapshot.
// ok is false where sums cannot tell a day.
func (c *Tier) rowsFromSums(ctx context.Context, t *Table, ice *table.Table, sums *rollup.Stream, carry rollupCarry, carried bool, st RollupState, w time.Time, v int64) (rows []rollup.Row, next rollupCarry, ok bool, err error) {
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
		sums.AddRows(carry.rows)
		lo = carry.lo
	case lo.Before(prev):
		b := rollup.NewBuilder(&t.decl, c.cal)
		for r, err := range c.scanColumns(ctx, t, ice, series.Range{From: lo, To: prev}, rollup.Needs(&t.decl)) {
			if err != nil {
				return nil, rollupCarry{}, false, fmt.Errorf("cold: rollup of %s: %w", t.decl.Name, err)
			}
			b.Add(&r)
		}
		sums.AddBuilder(b)
	}
	next = rollupCarry{lo: lo}
	all, spans := sums.Rows(v), newDaySpans(c.cal)
	rows = all[:0] // in place: a row is kept at or before where it was
	for _, x := range all {
		start, end := spans.of(x.Day, x.Commodity)
		switch {
		case end.After(w) && !start.Before(lo):
			next.rows = append(next.rows, x) // summed whole, so far
		case !end.After(prev) || end.After(w):
			// Settled before, or not yet.
		case start.Before(lo):
			// A day of a commodity the table does not declare, straddling
			// prev: its part below was not read.
			return nil, rollupCarry{}, false, nil
		default:
			rows = append(rows, x)
		}
	}
	return rows, next, true, nil
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

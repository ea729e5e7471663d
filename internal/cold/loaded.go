package cold

import (
	"context"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/meterstore/meterstore/consensus/postgres"
	"github.com/meterstore/meterstore/series"
)

// A Loaded is a table's state as one load read it: its metadata and,
// where the catalog's log says, the log's commit the metadata is of. A
// reader may keep it and plan in it again (PlanIn) for as long as the
// log's head is still that commit (see HeadQuery).
type Loaded struct {
	ice *table.Table
	// Seq is the log's sequence number of the commit loaded; HasSeq is
	// false where the catalog does not say (not MeterStore's own).
	Seq    int64
	HasSeq bool
}

// Load loads t's current state.
func (c *Tier) Load(ctx context.Context, t *Table) (Loaded, error) {
	if c.own == nil {
		ice, err := c.load(ctx, t)
		return Loaded{ice: ice}, err
	}
	ice, cm, err := c.own.LoadCurrent(ctx, t.ident)
	if ice, err = c.loaded(t, ice, err); err != nil {
		return Loaded{}, err
	}
	return Loaded{ice: ice, Seq: cm.Seq, HasSeq: true}, nil
}

// PlanIn returns the plan of the readings q selects in cur's snapshot of
// t, as Plan does in the current one.
func (c *Tier) PlanIn(ctx context.Context, t *Table, cur Loaded, q series.Range) (Plan, error) {
	return c.planOf(ctx, t, cur.ice, cur.ice.CurrentSnapshot(), q)
}

// HeadQuery returns, where t's catalog log is in PostgreSQL in the
// database db reaches, a scalar subquery of t's log head (Loaded.Seq) for
// a statement on db; ok is false elsewhere. arg binds a parameter and
// returns its placeholder.
func (c *Tier) HeadQuery(ctx context.Context, t *Table, db postgres.RowQuerier) (q func(arg func(any) string) string, ok bool, err error) {
	if c.own == nil {
		return nil, false, nil
	}
	return c.own.HeadQuery(ctx, t.ident, db)
}

// Watermark returns the W of l's current snapshot, as Watermark does of
// its metadata.
func (l Loaded) Watermark() (time.Time, bool, error) {
	return Watermark(l.ice.Metadata())
}

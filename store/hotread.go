package store

import (
	"context"
	"fmt"
	"time"

	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/internal/query"
	"github.com/meterstore/meterstore/series"
)

// hotTier gives the query engine the hot tier's reads in its own terms:
// the tiers do not import each other.
type hotTier struct{ *hot.Tier }

var (
	_ query.HotSnapshotReader = hotTier{}
	_ query.HotBesideReader   = hotTier{}
	_ query.HotDayRead        = hotRead{}
)

func (h hotTier) Snapshot(ctx context.Context, conns int) (query.HotSnapshot, error) {
	return h.OpenSnapshot(ctx, conns)
}

func (h hotTier) SnapshotRead(ctx context.Context, conns int, t *series.Table, q series.Range) (query.HotSnapshot, query.HotRead, error) {
	s, r, err := h.OpenSnapshotRead(ctx, conns, t, q)
	if err != nil {
		return nil, nil, err
	}
	return s, hotRead{Read: r, shape: shapeOf(r.Shape())}, nil
}

func (h hotTier) SnapshotReadBeside(ctx context.Context, conns int, t *series.Table, q series.Range, beside func(arg func(any) string) string) (query.HotSnapshot, query.HotRead, time.Time, bool, error) {
	s, r, b, err := h.OpenSnapshotReadBeside(ctx, conns, t, q, beside)
	if err != nil {
		return nil, nil, time.Time{}, false, err
	}
	return s, hotRead{Read: r, shape: shapeOf(r.Shape())}, b.At, b.Has, nil
}

func (h hotTier) Read(ctx context.Context, snap query.HotSnapshot, t *series.Table, q series.Range) (query.HotRead, error) {
	s, ok := snap.(*hot.Snapshot)
	if !ok {
		return nil, fmt.Errorf("store: a snapshot of another hot tier: %T", snap)
	}
	r, err := s.Read(ctx, t, q)
	if err != nil {
		return nil, err
	}
	return hotRead{Read: r, shape: shapeOf(r.Shape())}, nil
}

// hotRead is a hot.Read as a query.HotRead; its cursors are one already,
// and its snapshot ends it.
type hotRead struct {
	*hot.Read
	shape query.HotShape
}

func (r hotRead) Shape() query.HotShape { return r.shape }

// SnapshotFloor returns the table's floor as the read's snapshot saw it.
func (r hotRead) SnapshotFloor() (query.Floor, bool) {
	detached, attached := r.Read.Floor()
	return query.Floor{Detached: detached, Attached: attached, HasAttached: !attached.IsZero()}, true
}

func (r hotRead) Close() error { return nil }

func (r hotRead) Scan(ctx context.Context, rel, unit int, cols []int, winners bool) (query.HotCursor, error) {
	c, err := r.Read.Scan(ctx, rel, unit, cols, winners)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// DayColumns returns the columns of the read's day sums; ok is false
// where its layout sums none.
func (r hotRead) DayColumns() ([]query.HotColumn, bool) {
	cols := r.Read.DayColumns()
	if cols == nil {
		return nil, false
	}
	return relationOf(hot.Relation{Columns: cols}).Columns, true
}

func (r hotRead) ScanDays(ctx context.Context, unit int, lo time.Time, cols []int) (query.HotCursor, error) {
	c, err := r.Read.ScanDays(ctx, unit, lo, cols)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// DayTokens returns the tokens of the read's units whose day sums from
// lo on are stored whole (see hot.Read.DayTokens).
func (r hotRead) DayTokens(ctx context.Context, lo time.Time) ([]query.DayToken, error) {
	toks, err := r.Read.DayTokens(ctx, lo)
	if err != nil {
		return nil, err
	}
	out := make([]query.DayToken, len(toks))
	for i, t := range toks {
		out[i] = query.DayToken{Unit: t.Unit, From: t.From, To: t.To, Token: t.Token}
	}
	return out, nil
}

func shapeOf(s hot.Shape) query.HotShape {
	// The primary key holds the merge key and the version.
	out := query.HotShape{Rows: relationOf(s.Rows), Series: s.Series, Resolves: true}
	for _, d := range s.Dicts {
		out.Dicts = append(out.Dicts, query.HotDict{HotRelation: relationOf(d.Relation), ID: d.ID, Ref: d.Ref})
	}
	return out
}

func relationOf(r hot.Relation) query.HotRelation {
	out := query.HotRelation{Rows: r.Rows, Columns: make([]query.HotColumn, len(r.Columns))}
	for i, c := range r.Columns {
		out.Columns[i] = query.HotColumn{Name: c.Name, Kind: kinds[c.Kind]}
	}
	return out
}

var kinds = map[hot.Kind]query.HotKind{
	hot.KindText: query.KindText, hot.KindInt32: query.KindInt32, hot.KindInt64: query.KindInt64,
	hot.KindTime: query.KindTime, hot.KindDate: query.KindDate, hot.KindDecimal: query.KindDecimal,
	hot.KindUint64: query.KindUint64,
}

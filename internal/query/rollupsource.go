package query

import (
	"context"
	"time"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/series"
)

// A RollupSource is a Source that also has the stored daily rollup of its
// table (see cold.Tier.CatchUpRollup), which the relation daily reads for
// the days it holds.
type RollupSource interface {
	// Rollup plans the local files of the rollup that reflects snapshot
	// source of the cold table, for the days q bounds; ok is false if no
	// rollup reflects it.
	Rollup(ctx context.Context, source int64, q series.Range) (p cold.Plan, ok bool, err error)
}

var _ RollupSource = (*TableSource)(nil)

// Rollup plans the rollup that reflects snapshot source and makes its
// files local, vetted as every cold plan is.
func (s *TableSource) Rollup(ctx context.Context, source int64, q series.Range) (cold.Plan, bool, error) {
	p, ok, err := s.ColdTier.PlanRollup(ctx, s.ColdTable, source, q)
	if err != nil || !ok {
		return cold.Plan{}, false, s.found(ctx, err)
	}
	lp, err := s.local(ctx, p)
	return lp, err == nil, err
}

// A storedDays is the part of daily the rollup answers: the days ending at
// or before w, from files.
type storedDays struct {
	files []string
	w     time.Time
}

// storedDaily returns the rollup that answers daily's settled days for the
// read tr of table e, if one does: only in an automatic read that sees
// every version recorded (no known_at), of a snapshot with a watermark,
// whose rollup reflects exactly that snapshot. Otherwise daily is computed
// from readings, which is exact too.
func (e *Engine) storedDaily(ctx context.Context, tr *TableRead, r series.Range, o ReadOptions) (*storedDays, error) {
	rs, ok := e.src.(RollupSource)
	if !ok || o.Mode != ReadAuto || !o.KnownAt.IsZero() || !tr.HasWatermark || tr.Snapshot == 0 {
		return nil, nil
	}
	p, ok, err := rs.Rollup(ctx, tr.Snapshot, r)
	if err != nil || !ok {
		return nil, err
	}
	return &storedDays{files: p.Files, w: tr.Watermark}, nil
}

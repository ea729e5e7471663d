package store

import (
	"context"
	"slices"
	"time"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/internal/query"
	"github.com/meterstore/meterstore/series"
)

// source gives the query engine one table's tiers.
type source struct {
	s *Store
	t *table
}

func (src *source) Watermark(ctx context.Context) (time.Time, bool, error) {
	return src.s.cold.Watermark(ctx, src.t.cold)
}

func (src *source) Hot(ctx context.Context, q series.Range, fn func(series.Reading) error) error {
	var n int64
	err := src.s.hot.Scan(ctx, src.t.decl, q, func(r series.Reading) error {
		n++
		return fn(r)
	})
	src.s.metrics.Scanned(ctx, src.t.decl.Name, "hot", n)
	return err
}

func (src *source) HotFloor(ctx context.Context) (query.Floor, error) {
	parts, err := src.s.hot.Partitions(ctx, src.t.decl)
	if err != nil {
		return query.Floor{}, err
	}
	return hotFloor(parts), nil
}

// hotFloor walks the partitions down from the highest: the attached ones
// above the highest detached one vouch for every row at or above the
// lowest of them.
func hotFloor(parts []hot.Partition) query.Floor {
	parts = slices.Clone(parts)
	slices.SortFunc(parts, func(a, b hot.Partition) int { return a.From.Compare(b.From) })
	var f query.Floor
	for i := len(parts) - 1; i >= 0; i-- {
		if !parts[i].Attached {
			f.Detached = parts[i].To
			break
		}
		f.Attached, f.HasAttached = parts[i].From, true
	}
	return f
}

func (src *source) Cold(ctx context.Context, q series.Range) (cold.Plan, error) {
	p, err := src.s.cold.Plan(ctx, src.t.cold, q)
	if err != nil {
		return cold.Plan{}, err
	}
	return p.Local(ctx, src.s.opts.Query.CacheDir)
}

package cold

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/internal/rollup"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// RollupRows returns every row of rollup table r's current snapshot, of
// every rollup version (see rollup.Current for those that hold), and what
// the snapshot reflects. It holds them all: for tests and verification of
// samples, not for queries, which read the files.
func (c *Tier) RollupRows(ctx context.Context, r *Table) ([]rollup.Row, RollupState, error) {
	return c.rollupRows(ctx, r, series.Range{})
}

// rollupRows is RollupRows for the days whose start q selects.
func (c *Tier) rollupRows(ctx context.Context, r *Table, q series.Range) ([]rollup.Row, RollupState, error) {
	ice, err := c.load(ctx, r)
	if err != nil {
		return nil, RollupState{}, err
	}
	return c.rollupRowsOf(ctx, r, ice, q)
}

// rollupRowsOf is rollupRows of rollup table r at state ice.
func (c *Tier) rollupRowsOf(ctx context.Context, r *Table, ice *table.Table, q series.Range) ([]rollup.Row, RollupState, error) {
	st, err := rollupState(ice.CurrentSnapshot())
	if err != nil || !st.Ok {
		return nil, st, err
	}
	s := ice.Scan(table.WithMaxConcurrency(1), table.WithRowFilter(rowFilter(q)))
	defer s.Close()
	_, recs, err := s.ToArrowRecords(ctx)
	if err != nil {
		return nil, st, fmt.Errorf("cold: read the rollup %s: %w", r.decl.Name, err)
	}
	var out []rollup.Row
	for rec, err := range recs {
		if err != nil {
			return nil, st, fmt.Errorf("cold: read the rollup %s: %w", r.decl.Name, err)
		}
		rows, err := decodeRollup(rec)
		rec.Release()
		if err != nil {
			return nil, st, fmt.Errorf("cold: read the rollup %s: %w", r.decl.Name, err)
		}
		out = append(out, rows...)
	}
	return out, st, nil
}

// decodeRollup returns the rows of a record batch of a rollup table.
func decodeRollup(rec arrow.RecordBatch) ([]rollup.Row, error) {
	qs := metering.Qualities()
	n := int(rec.NumRows())
	out := make([]rollup.Row, n)
	for i := range out {
		out[i].Qualities = make([]int64, len(qs))
	}
	for ci, f := range rec.Schema().Fields() {
		col := rec.Column(ci)
		q := qualityOf(qs, f.Name) // once a column, not once a row
		for i := range out {
			x := &out[i]
			var err error
			switch f.Name {
			case "malo_id":
				x.MaLo = col.(*array.String).Value(i)
			case "obis_code":
				x.OBIS = col.(*array.String).Value(i)
			case "balancing_day":
				y, m, d := col.(*array.Date32).Value(i).ToTime().Date()
				x.Day = metering.Date{Year: y, Month: m, Day: d}
			case "sparte":
				x.Commodity, err = metering.ParseCommodity(col.(*array.String).Value(i))
			case "resolution":
				x.Resolution, err = metering.ParseResolution(col.(*array.String).Value(i))
			case "unit":
				x.Unit, err = metering.ParseUnit(col.(*array.String).Value(i))
			case "from", "to":
			case "expected":
				x.Expected = -1
				if col.IsValid(i) {
					x.Expected = col.(*array.Int64).Value(i)
				}
			case "present":
				x.Present = col.(*array.Int64).Value(i)
			case "on_grid":
				x.OnGrid = col.(*array.Int64).Value(i)
			case "value_sum":
				x.Sum = int64(col.(*array.Decimal128).Value(i).LowBits()) // a sum of a day fits in int64 (Row.Sum)
			case "max_version":
				x.MaxVersion = col.(*array.Decimal128).Value(i).LowBits()
			case "max_recorded_at":
				x.MaxRecord = time.UnixMicro(int64(col.(*array.Timestamp).Value(i))).UTC()
			case "rollup_version":
				x.Version = col.(*array.Int64).Value(i)
			default:
				if q >= 0 {
					x.Qualities[q] = col.(*array.Int64).Value(i)
					continue
				}
				switch a := col.(type) {
				case *array.String:
					x.Identity = append(x.Identity, a.Value(i))
				case *array.Int64:
					x.Identity = append(x.Identity, strconv.FormatInt(a.Value(i), 10))
				default:
					err = fmt.Errorf("column %q of type %s", f.Name, f.Type)
				}
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// PlanRollup plans the files of the rollup of t that reflect t's snapshot
// source, for the days whose start q selects: those of the newest rollup
// snapshot naming source in its summary, with that snapshot's watermark.
// ok is false when no rollup snapshot names it (the rollup is behind, or
// there is none), or the one that does lacks a column of the rollup's
// schema (see rollupAnswers): the reader computes the days from the
// readings then.
func (c *Tier) PlanRollup(ctx context.Context, t *Table, source int64, q series.Range) (p Plan, ok bool, err error) {
	r := c.RollupHandle(t)
	ice, err := c.load(ctx, r)
	if errors.Is(err, icecatalog.ErrNoSuchTable) || errors.Is(err, icecatalog.ErrNoSuchNamespace) {
		return Plan{}, false, nil
	}
	if err != nil {
		return Plan{}, false, err
	}
	want := strconv.FormatInt(source, 10)
	meta := ice.Metadata()
	for s := ice.CurrentSnapshot(); s != nil; {
		if s.Summary != nil && s.Summary.Properties[rollup.SummarySourceSnapshot] == want {
			if !rollupAnswers(&t.decl, ice, s) {
				return Plan{}, false, nil
			}
			p, err := c.planOf(ctx, r, ice, s, q)
			return p, err == nil, err
		}
		if s.ParentSnapshotID == nil {
			break
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	return Plan{}, false, nil
}

// PlanRollupCurrent plans the files of the current snapshot of the rollup
// of t, for the days whose start q selects, and returns the snapshot of t
// it reflects; ok is false if there is none or it lacks a column of the
// rollup's schema. The plan's Watermark is the one it reflects.
func (c *Tier) PlanRollupCurrent(ctx context.Context, t *Table, q series.Range) (p Plan, source int64, ok bool, err error) {
	r := c.RollupHandle(t)
	ice, err := c.load(ctx, r)
	if errors.Is(err, icecatalog.ErrNoSuchTable) || errors.Is(err, icecatalog.ErrNoSuchNamespace) {
		return Plan{}, 0, false, nil
	}
	if err != nil {
		return Plan{}, 0, false, err
	}
	st, err := rollupState(ice.CurrentSnapshot())
	if err != nil || !st.Ok || !rollupAnswers(&t.decl, ice, ice.CurrentSnapshot()) {
		return Plan{}, 0, false, err
	}
	p, err = c.planOf(ctx, r, ice, ice.CurrentSnapshot(), q)
	return p, st.Source, err == nil, err
}

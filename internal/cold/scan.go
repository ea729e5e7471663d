package cold

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/series"
)

// Scan returns the readings of t that q selects, from the table's current
// snapshot. Files are read one at a time in batches of Options.BatchRows, so
// memory stays bounded however many rows match; the order is that of the
// files, not a sort order. An unreachable tier is an error from the stream,
// never an empty result.
func (c *Tier) Scan(ctx context.Context, t *Table, q series.Range) Rows {
	return func(yield func(series.Reading, error) bool) {
		ice, err := c.load(ctx, t)
		if err != nil {
			yield(series.Reading{}, err)
			return
		}
		c.scan(ctx, t, ice, q)(yield)
	}
}

// scan reads the snapshot ice is at.
func (c *Tier) scan(ctx context.Context, t *Table, ice *table.Table, q series.Range) Rows {
	return c.scanColumns(ctx, t, ice, q, nil)
}

// scanColumns is scan reading only the declared columns keep keeps (nil:
// all); the readings it returns lack the others.
func (c *Tier) scanColumns(ctx context.Context, t *Table, ice *table.Table, q series.Range, keep func(name string) bool) Rows {
	return func(yield func(series.Reading, error) bool) {
		if !q.From.IsZero() && !q.To.IsZero() && !q.From.Before(q.To) {
			return
		}
		// Only the declared columns the table has: a dropped nullable
		// column reads as empty, and a foreign column is not ours to return.
		have := ice.Schema()
		var names []string
		for _, f := range Schema(&t.decl).Fields() {
			if _, ok := have.FindFieldByName(f.Name); ok && (keep == nil || keep(f.Name)) {
				names = append(names, f.Name)
			}
		}
		s := ice.Scan(
			table.WithRowFilter(rowFilter(q)),
			table.WithSelectedFields(names...),
			// One file at a time: a parallel scan holds a whole decoded
			// file per worker while an earlier one is slow.
			table.WithMaxConcurrency(1),
			table.WithArrowBatchSize(c.opts.BatchRows),
		)
		defer s.Close()
		_, recs, err := s.ToArrowRecords(ctx)
		if err != nil {
			yield(series.Reading{}, fmt.Errorf("cold: scan %s: %w", t.decl.Name, err))
			return
		}
		d := &decoder{decl: &t.decl}
		for rec, err := range recs {
			if err != nil {
				yield(series.Reading{}, fmt.Errorf("cold: scan %s: %w", t.decl.Name, err))
				return
			}
			if !d.each(rec, yield) {
				return
			}
		}
	}
}

// rowFilter returns the Iceberg row filter of q. The bounds on "from" prune
// whole partitions and files; the ids use the bloom filters.
func rowFilter(q series.Range) iceberg.BooleanExpression {
	var preds []iceberg.BooleanExpression
	from := iceberg.Reference("from")
	if !q.From.IsZero() {
		preds = append(preds, iceberg.GreaterThanEqual(from, micros(q.From)))
	}
	if !q.To.IsZero() {
		preds = append(preds, iceberg.LessThan(from, micros(q.To)))
	}
	if len(q.MaLo) > 0 {
		preds = append(preds, iceberg.IsIn(iceberg.Reference("malo_id"), q.MaLo...))
	}
	if len(q.OBIS) > 0 {
		preds = append(preds, iceberg.IsIn(iceberg.Reference("obis_code"), q.OBIS...))
	}
	switch len(preds) {
	case 0:
		return iceberg.AlwaysTrue{}
	case 1:
		return preds[0]
	}
	return iceberg.NewAnd(preds[0], preds[1], preds[2:]...)
}

// micros returns t as an Iceberg timestamp literal. A bound finer than a
// microsecond is rounded up, which keeps [From, To) exact on stored values.
func micros(t time.Time) iceberg.Timestamp {
	us := t.UnixMicro()
	if t.Truncate(time.Microsecond).Before(t) {
		us++
	}
	return iceberg.Timestamp(us)
}

package cold

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/internal/rollup"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// The daily rollup of an interval table t is an Iceberg table of its own,
// of t's name in the namespace rollup.Namespace of t's, partitioned by the month of the
// day's start. It is only appended to: a series' day is written again as
// a higher rollup_version (see rollup.Current), each snapshot naming in its
// summary the snapshot of t and the watermark it reflects. The two tables
// commit separately, so a reader compares those with the snapshot of t it
// reads (see RollupState).

// RollupHandle returns the handle of t's rollup table, reading nothing.
func (c *Tier) RollupHandle(t *Table) *Table {
	d := *cloneDecl(&t.decl)
	ns := rollup.Namespace(c.opts.Namespace)
	d.Name = ns + "." + t.decl.Name // as messages name it
	return &Table{decl: d, ident: table.Identifier{ns, t.decl.Name}}
}

// EnsureRollup creates the rollup table of the interval table t unless it
// exists, and returns its handle.
func (c *Tier) EnsureRollup(ctx context.Context, t *Table) (*Table, error) {
	h, _, err := c.ensureRollup(ctx, t)
	return h, err
}

// ensureRollup is EnsureRollup, and returns the rollup table's state too.
func (c *Tier) ensureRollup(ctx context.Context, t *Table) (*Table, *table.Table, error) {
	if t.decl.TimeModel != series.Interval {
		return nil, nil, fmt.Errorf("cold: rollup of %s: only interval tables have one", t.decl.Name)
	}
	h := c.RollupHandle(t)
	ice, err := c.load(ctx, h)
	switch {
	case err == nil:
		return h, ice, nil
	case !errors.Is(err, icecatalog.ErrNoSuchTable) && !errors.Is(err, icecatalog.ErrNoSuchNamespace):
		return nil, nil, fmt.Errorf("cold: ensure the rollup of %s: %w", t.decl.Name, err)
	}
	err = c.cat.CreateNamespace(ctx, table.Identifier{h.ident[0]}, iceberg.Properties{"owner": "meterstore"})
	if err != nil && !errors.Is(err, icecatalog.ErrNamespaceAlreadyExists) {
		return nil, nil, fmt.Errorf("cold: ensure the rollup of %s: create namespace %s: %w", t.decl.Name, h.ident[0], err)
	}
	sc := rollup.Schema(&t.decl)
	from, _ := sc.FindFieldByName("from")
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{from.ID}, FieldID: 1000, Name: "from_month", Transform: iceberg.MonthTransform{}})
	props := iceberg.Properties{
		table.PropertyFormatVersion:               "2",
		table.MetadataDeleteAfterCommitEnabledKey: "true",
		table.ParquetCompressionKey:               "zstd",
		table.ParquetCompressionLevelKey:          fmt.Sprint(c.opts.ZstdLevel),
		table.WriteTargetFileSizeBytesKey:         fmt.Sprint(c.opts.TargetFileSize),
	}
	ice, err = c.cat.CreateTable(ctx, h.ident, sc, icecatalog.WithPartitionSpec(&spec), icecatalog.WithProperties(props))
	if errors.Is(err, icecatalog.ErrTableAlreadyExists) { // a concurrent EnsureRollup came first
		ice, err = c.load(ctx, h)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("cold: ensure the rollup of %s: %w", t.decl.Name, err)
	}
	return h, ice, nil
}

// A RollupState is what a rollup table's current snapshot reflects: the
// snapshot of the source table and its watermark. Ok is false for a
// rollup without snapshots.
type RollupState struct {
	Source    int64
	Watermark time.Time
	Ok        bool
}

// RollupState returns what rollup table r's current snapshot reflects.
func (c *Tier) RollupState(ctx context.Context, r *Table) (RollupState, error) {
	ice, err := c.load(ctx, r)
	if err != nil {
		return RollupState{}, err
	}
	return rollupState(ice.CurrentSnapshot())
}

func rollupState(s *table.Snapshot) (RollupState, error) {
	if s == nil || s.Summary == nil {
		return RollupState{}, nil
	}
	p := s.Summary.Properties
	src, err := strconv.ParseInt(p[rollup.SummarySourceSnapshot], 10, 64)
	if err != nil {
		return RollupState{}, fmt.Errorf("cold: rollup snapshot %d: %s: %w", s.SnapshotID, rollup.SummarySourceSnapshot, err)
	}
	w, err := parseTime(p[rollup.SummaryWatermark])
	if err != nil {
		return RollupState{}, fmt.Errorf("cold: rollup snapshot %d: %s: %w", s.SnapshotID, rollup.SummaryWatermark, err)
	}
	return RollupState{Source: src, Watermark: w, Ok: true}, nil
}

// appendRollup appends rows to rollup table r, at state ice, as one
// snapshot reflecting snapshot source of the source table, at watermark w,
// that removes the data files replace.
func (c *Tier) appendRollup(ctx context.Context, r *Table, ice *table.Table, rows []rollup.Row, replace []iceberg.DataFile, source int64, w string) (Commit, error) {
	asc, err := table.SchemaToArrowSchema(ice.Schema(), nil, true, false)
	if err != nil {
		return Commit{}, fmt.Errorf("cold: rollup %s: %w", r.decl.Name, err)
	}
	rec := &records{schema: asc, batches: rollupBatches(&r.decl, c.cal, asc, rows, max(c.opts.BatchRows, 1))}
	return c.commit(ctx, r, ice, write{
		op:      "rollup",
		records: []*records{rec},
		summary: iceberg.Properties{rollup.SummarySourceSnapshot: strconv.FormatInt(source, 10), rollup.SummaryWatermark: w},
		rowsKey: SummaryRows,
		replace: replace,
		pin:     true, // a catch-up is computed against the rollup it read
	})
}

// rollupBatches returns rows as record batches of schema asc, n rows each.
func rollupBatches(decl *series.Table, cal *metering.Calendar, asc *arrow.Schema, rows []rollup.Row, n int) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		cols := rollupColumns(cal, asc)
		for lo := 0; lo < len(rows); lo += n {
			b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
			b.Reserve(min(n, len(rows)-lo))
			for i := range rows[lo:min(lo+n, len(rows))] {
				x := &rows[lo+i]
				for j, col := range cols {
					if err := col(b.Field(j), x); err != nil {
						b.Release()
						yield(nil, fmt.Errorf("cold: rollup %s: column %q: %w", decl.Name, asc.Field(j).Name, err))
						return
					}
				}
			}
			rec := b.NewRecordBatch()
			b.Release()
			if !yield(rec, nil) {
				return
			}
		}
	}
}

// A rollupColumn appends a rollup row's value of one column to the
// column's builder.
type rollupColumn func(b array.Builder, x *rollup.Row) error

// rollupColumns returns the appenders of the columns of asc, in order,
// each chosen once for every row it appends.
func rollupColumns(cal *metering.Calendar, asc *arrow.Schema) []rollupColumn {
	qs := metering.Qualities()
	spans := newDaySpans(cal)
	bound := func(x *rollup.Row, end bool) arrow.Timestamp {
		from, to := spans.of(x.Day, x.Commodity)
		if end {
			return arrow.Timestamp(to.UnixMicro())
		}
		return arrow.Timestamp(from.UnixMicro())
	}
	str := func(v func(x *rollup.Row) string) rollupColumn {
		return func(b array.Builder, x *rollup.Row) error { b.(*array.StringBuilder).Append(v(x)); return nil }
	}
	long := func(v func(x *rollup.Row) int64) rollupColumn {
		return func(b array.Builder, x *rollup.Row) error { b.(*array.Int64Builder).Append(v(x)); return nil }
	}
	ts := func(v func(x *rollup.Row) arrow.Timestamp) rollupColumn {
		return func(b array.Builder, x *rollup.Row) error { b.(*array.TimestampBuilder).Append(v(x)); return nil }
	}
	var out []rollupColumn
	ids := 0
	for _, f := range asc.Fields() {
		var col rollupColumn
		switch f.Name {
		case "malo_id":
			col = str(func(x *rollup.Row) string { return x.MaLo })
		case "obis_code":
			col = str(func(x *rollup.Row) string { return x.OBIS })
		case "balancing_day":
			col = func(b array.Builder, x *rollup.Row) error {
				b.(*array.Date32Builder).Append(arrow.Date32FromTime(time.Date(x.Day.Year, x.Day.Month, x.Day.Day, 0, 0, 0, 0, time.UTC)))
				return nil
			}
		case "sparte":
			col = str(func(x *rollup.Row) string { return x.Commodity.String() })
		case "resolution":
			col = str(func(x *rollup.Row) string { return x.Resolution.String() })
		case "unit":
			col = str(func(x *rollup.Row) string { return x.Unit.String() })
		case "from":
			col = ts(func(x *rollup.Row) arrow.Timestamp { return bound(x, false) })
		case "to":
			col = ts(func(x *rollup.Row) arrow.Timestamp { return bound(x, true) })
		case "expected":
			col = func(b array.Builder, x *rollup.Row) error {
				if x.Expected < 0 {
					b.AppendNull()
				} else {
					b.(*array.Int64Builder).Append(x.Expected)
				}
				return nil
			}
		case "present":
			col = long(func(x *rollup.Row) int64 { return x.Present })
		case "on_grid":
			col = long(func(x *rollup.Row) int64 { return x.OnGrid })
		case "value_sum":
			col = func(b array.Builder, x *rollup.Row) error {
				b.(*array.Decimal128Builder).Append(decimal128.FromI64(x.Sum))
				return nil
			}
		case "max_version":
			col = func(b array.Builder, x *rollup.Row) error {
				b.(*array.Decimal128Builder).Append(decimal128.FromU64(x.MaxVersion))
				return nil
			}
		case "max_recorded_at":
			col = ts(func(x *rollup.Row) arrow.Timestamp { return arrow.Timestamp(x.MaxRecord.UnixMicro()) })
		case "rollup_version":
			col = long(func(x *rollup.Row) int64 { return x.Version })
		default:
			if q := qualityOf(qs, f.Name); q >= 0 {
				col = long(func(x *rollup.Row) int64 { return x.Qualities[q] })
				break
			}
			// An identity column, in declared order.
			id := ids
			ids++
			col = func(b array.Builder, x *rollup.Row) error {
				v := ""
				if id < len(x.Identity) {
					v = x.Identity[id]
				}
				return appendIdentity(b, v)
			}
		}
		out = append(out, col)
	}
	return out
}

func qualityOf(qs []metering.Quality, name string) int {
	for i, q := range qs {
		if rollup.QualityColumn(q) == name {
			return i
		}
	}
	return -1
}

func appendIdentity(b array.Builder, v string) error {
	switch b := b.(type) {
	case *array.StringBuilder:
		b.Append(v)
	case *array.Int64Builder:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return err
		}
		b.Append(n)
	default:
		return fmt.Errorf("arrow builder %T", b)
	}
	return nil
}

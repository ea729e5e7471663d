package cold

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"

	"github.com/meterstore/meterstore/series"
)

// A partitioner finds the partitions of the rows of Arrow record batches,
// under a spec of the transforms the Tier partitions by: month of a
// timestamp, and identity of a string, integer or boolean column.
type partitioner struct {
	fields []partField
}

type partField struct {
	col        int  // in the batches' schema
	month      bool // month(col), or else identity(col)
	superseded bool // identity of the superseded mark
}

// A run is rows [start, end) of a batch that share a partition: its key,
// and its values in spec order (nil for null), for the file's path.
// superseded says the partition holds superseded versions only; month is
// the value of the spec's month field, if it has one (hasMonth).
type run struct {
	start, end int
	key        string
	values     partitionValues
	superseded bool
	month      int32
	hasMonth   bool
}

func newPartitioner(spec iceberg.PartitionSpec, sc *iceberg.Schema, asc *arrow.Schema) (*partitioner, error) {
	p := &partitioner{}
	for _, f := range spec.Fields() {
		src, ok := sc.FindFieldByID(f.SourceID())
		if !ok {
			return nil, fmt.Errorf("partition field %s: no source column %d", f.Name, f.SourceID())
		}
		idx := asc.FieldIndices(src.Name)
		if len(idx) != 1 {
			return nil, fmt.Errorf("partition field %s: the rows lack column %q", f.Name, src.Name)
		}
		pf := partField{col: idx[0]}
		typ := asc.Field(idx[0]).Type
		switch f.Transform.(type) {
		case iceberg.MonthTransform:
			if tt, ok := typ.(*arrow.TimestampType); !ok || tt.Unit != arrow.Microsecond {
				return nil, fmt.Errorf("partition field %s: month of %s", f.Name, typ)
			}
			pf.month = true
		case iceberg.IdentityTransform:
			switch typ.ID() {
			case arrow.STRING, arrow.INT64, arrow.BOOL:
			default:
				return nil, fmt.Errorf("partition field %s: identity of %s", f.Name, typ)
			}
			pf.superseded = src.Name == series.ColumnSuperseded
		default:
			return nil, fmt.Errorf("partition field %s: transform %s is not one the Tier writes", f.Name, f.Transform)
		}
		p.fields = append(p.fields, pf)
	}
	return p, nil
}

// runs returns the runs of b's rows, each as long as the partition stays
// the same.
func (p *partitioner) runs(b arrow.RecordBatch) []run {
	n := int(b.NumRows())
	if n == 0 {
		return nil
	}
	var out []run
	start := 0
	for i := 1; i < n; i++ {
		if !p.same(b, i-1, i) {
			out = append(out, p.run(b, start, i))
			start = i
		}
	}
	return append(out, p.run(b, start, n))
}

func (p *partitioner) same(b arrow.RecordBatch, i, j int) bool {
	for _, f := range p.fields {
		a := b.Column(f.col)
		if a.IsNull(i) || a.IsNull(j) {
			if a.IsNull(i) != a.IsNull(j) {
				return false
			}
			continue
		}
		switch a := a.(type) {
		case *array.Timestamp:
			if !f.month {
				if a.Value(i) != a.Value(j) {
					return false
				}
			} else if month(a.Value(i)) != month(a.Value(j)) {
				return false
			}
		case *array.String:
			if a.Value(i) != a.Value(j) {
				return false
			}
		case *array.Int64:
			if a.Value(i) != a.Value(j) {
				return false
			}
		case *array.Boolean:
			if a.Value(i) != a.Value(j) {
				return false
			}
		}
	}
	return true
}

func (p *partitioner) run(b arrow.RecordBatch, start, end int) run {
	r := run{start: start, end: end, values: make(partitionValues, len(p.fields))}
	var key strings.Builder
	for k, f := range p.fields {
		a := b.Column(f.col)
		key.WriteByte(0)
		if a.IsNull(start) {
			key.WriteByte('n')
			continue
		}
		key.WriteByte('v')
		switch a := a.(type) {
		case *array.Timestamp:
			m := month(a.Value(start))
			r.values[k] = m
			if f.month && !r.hasMonth {
				r.month, r.hasMonth = m, true
			}
			key.WriteString(strconv.Itoa(int(m)))
		case *array.String:
			r.values[k] = a.Value(start)
			key.WriteString(a.Value(start))
		case *array.Int64:
			r.values[k] = a.Value(start)
			key.WriteString(strconv.FormatInt(a.Value(start), 10))
		case *array.Boolean:
			r.values[k] = a.Value(start)
			key.WriteString(strconv.FormatBool(a.Value(start)))
			r.superseded = r.superseded || f.superseded && a.Value(start)
		}
	}
	r.key = key.String()
	return r
}

// month is Iceberg's month transform of a timestamp in microseconds: months
// since January 1970.
func month(us arrow.Timestamp) int32 {
	t := time.UnixMicro(int64(us)).UTC()
	return int32((t.Year()-1970)*12 + int(t.Month()) - 1)
}

// partitionValues are a partition's values in spec order, as
// iceberg.StructLike for PartitionSpec.PartitionToPath.
type partitionValues []any

func (v partitionValues) Size() int        { return len(v) }
func (v partitionValues) Get(i int) any    { return v[i] }
func (v partitionValues) Set(i int, x any) { v[i] = x }

package cold

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// A decoder turns the record batches of a scan back into readings.
type decoder struct {
	decl *series.Table
}

// A setter sets one column of row i of a batch on a reading.
type setter func(i int, r *series.Reading) error

// stringArray is what the string arrays of every width have in common.
type stringArray interface {
	arrow.Array
	Value(int) string
}

// setters returns a setter for every declared column the batch has.
func (d *decoder) setters(rec arrow.RecordBatch) ([]setter, error) {
	var out []setter
	for i, f := range rec.Schema().Fields() {
		s, err := d.setter(f, rec.Column(i))
		if err != nil {
			return nil, fmt.Errorf("cold: scan %s: column %q: %w", d.decl.Name, f.Name, err)
		}
		if s != nil {
			out = append(out, s)
		}
	}
	return out, nil
}

// setter returns the setter of column col, field f of a batch, or nil for
// a column the declaration does not know.
func (d *decoder) setter(f arrow.Field, col arrow.Array) (setter, error) {
	fld, ok := fieldOf(d.decl, f.Name)
	switch {
	case !ok:
		return nil, nil
	case fld.str != nil:
		a, ok := col.(stringArray)
		if !ok {
			return nil, fmt.Errorf("arrow type %s, want a string", f.Type)
		}
		return func(i int, r *series.Reading) error {
			if a.IsNull(i) {
				return nil
			}
			return fld.str(r, a.Value(i))
		}, nil
	case fld.ts != nil:
		a, ok := col.(*array.Timestamp)
		if !ok {
			return nil, fmt.Errorf("arrow type %s, want a timestamp", f.Type)
		}
		toTime, err := a.DataType().(*arrow.TimestampType).GetToTimeFunc()
		if err != nil {
			return nil, err
		}
		return func(i int, r *series.Reading) error {
			fld.ts(r, toTime(a.Value(i)).UTC())
			return nil
		}, nil
	case fld.dec != nil:
		a, ok := col.(*array.Decimal128)
		if !ok || a.DataType().(*arrow.Decimal128Type).Scale != fld.scale {
			return nil, fmt.Errorf("arrow type %s, want a decimal with scale %d", f.Type, fld.scale)
		}
		return func(i int, r *series.Reading) error { return fld.dec(r, a.Value(i)) }, nil
	case fld.date != nil:
		a, ok := col.(*array.Date32)
		if !ok {
			return nil, fmt.Errorf("arrow type %s, want date32", f.Type)
		}
		return func(i int, r *series.Reading) error {
			y, m, dd := a.Value(i).ToTime().Date()
			fld.date(r, metering.Date{Year: y, Month: m, Day: dd})
			return nil
		}, nil
	default:
		a, ok := col.(*array.Int64)
		if !ok {
			return nil, fmt.Errorf("arrow type %s, want int64", f.Type)
		}
		return func(i int, r *series.Reading) error {
			if !a.IsNull(i) {
				fld.int(r, a.Value(i))
			}
			return nil
		}, nil
	}
}

// each yields the readings of rec, in order, and releases it. It returns
// false when yield asked to stop.
func (d *decoder) each(rec arrow.RecordBatch, yield func(series.Reading, error) bool) bool {
	defer rec.Release()
	set, err := d.setters(rec)
	if err != nil {
		yield(series.Reading{}, err)
		return false
	}
	for i := range int(rec.NumRows()) {
		var r series.Reading
		for _, s := range set {
			if err := s(i, &r); err != nil {
				yield(series.Reading{}, fmt.Errorf("cold: scan %s: %w", d.decl.Name, err))
				return false
			}
		}
		if !yield(r, nil) {
			return false
		}
	}
	return true
}

package cold

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
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

func (d *decoder) setter(f arrow.Field, col arrow.Array) (setter, error) {
	str := func(set func(r *series.Reading, v string) error) (setter, error) {
		a, ok := col.(stringArray)
		if !ok {
			return nil, fmt.Errorf("arrow type %s, want a string", f.Type)
		}
		return func(i int, r *series.Reading) error {
			if a.IsNull(i) {
				return nil
			}
			return set(r, a.Value(i))
		}, nil
	}
	ts := func(set func(r *series.Reading, v time.Time)) (setter, error) {
		a, ok := col.(*array.Timestamp)
		if !ok {
			return nil, fmt.Errorf("arrow type %s, want a timestamp", f.Type)
		}
		toTime, err := a.DataType().(*arrow.TimestampType).GetToTimeFunc()
		if err != nil {
			return nil, err
		}
		return func(i int, r *series.Reading) error {
			set(r, toTime(a.Value(i)).UTC())
			return nil
		}, nil
	}
	dec := func(scale int32, set func(r *series.Reading, v decimal128.Num) error) (setter, error) {
		a, ok := col.(*array.Decimal128)
		if !ok || a.DataType().(*arrow.Decimal128Type).Scale != scale {
			return nil, fmt.Errorf("arrow type %s, want a decimal with scale %d", f.Type, scale)
		}
		return func(i int, r *series.Reading) error { return set(r, a.Value(i)) }, nil
	}
	switch f.Name {
	case "malo_id":
		return str(func(r *series.Reading, v string) error { r.MaLo = v; return nil })
	case "melo_id":
		return str(func(r *series.Reading, v string) error { r.MeLo = v; return nil })
	case "obis_code":
		return str(func(r *series.Reading, v string) error { r.OBIS = v; return nil })
	case "sparte":
		return str(code(metering.ParseCommodity, func(r *series.Reading, v metering.Commodity) { r.Commodity = v }))
	case "from":
		return ts(func(r *series.Reading, v time.Time) { r.From = v })
	case "to":
		return ts(func(r *series.Reading, v time.Time) { r.To = v })
	case "value":
		return dec(6, func(r *series.Reading, v decimal128.Num) error {
			if !fitsInt64(v) {
				return fmt.Errorf("value %s does not fit numeric(18,6)", v.ToString(6))
			}
			r.Value = series.Decimal(v.LowBits())
			return nil
		})
	case "unit":
		return str(code(metering.ParseUnit, func(r *series.Reading, v metering.Unit) { r.Unit = v }))
	case "quality":
		return str(code(metering.ParseQuality, func(r *series.Reading, v metering.Quality) { r.Quality = v }))
	case "resolution":
		return str(code(metering.ParseResolution, func(r *series.Reading, v metering.Resolution) { r.Resolution = v }))
	case "version":
		return dec(0, func(r *series.Reading, v decimal128.Num) error {
			if v.HighBits() != 0 {
				return fmt.Errorf("version %s does not fit numeric(20,0)", v.ToString(0))
			}
			r.Version = v.LowBits()
			return nil
		})
	case "version_scope":
		return str(func(r *series.Reading, v string) error { r.VersionScope = v; return nil })
	case "recorded_at":
		return ts(func(r *series.Reading, v time.Time) { r.RecordedAt = v })
	case "balancing_day":
		a, ok := col.(*array.Date32)
		if !ok {
			return nil, fmt.Errorf("arrow type %s, want date32", f.Type)
		}
		return func(i int, r *series.Reading) error {
			y, m, dd := a.Value(i).ToTime().Date()
			r.BalancingDay = metering.Date{Year: y, Month: m, Day: dd}
			return nil
		}, nil
	case "subject_id":
		return str(func(r *series.Reading, v string) error { r.Subject = v; return nil })
	}
	for _, c := range d.decl.Columns {
		if c.Name != f.Name {
			continue
		}
		name := c.Name
		if c.Type != series.BigInt {
			return str(func(r *series.Reading, v string) error { setExtra(r, name, v); return nil })
		}
		a, ok := col.(*array.Int64)
		if !ok {
			return nil, fmt.Errorf("arrow type %s, want int64", f.Type)
		}
		return func(i int, r *series.Reading) error {
			if !a.IsNull(i) {
				setExtra(r, name, strconv.FormatInt(a.Value(i), 10))
			}
			return nil
		}, nil
	}
	return nil, nil // a column the declaration does not know
}

func setExtra(r *series.Reading, k, v string) {
	if r.Extra == nil {
		r.Extra = make(map[string]string)
	}
	r.Extra[k] = v
}

// fitsInt64 reports whether n is within the range of an int64.
func fitsInt64(n decimal128.Num) bool {
	hi, lo := n.HighBits(), n.LowBits()
	return hi == 0 && lo <= math.MaxInt64 || hi == -1 && lo > math.MaxInt64
}

// code returns the setter of a code column. A code column repeats few
// values, so each is parsed once.
func code[T ~uint8](parse func(string) (T, error), set func(r *series.Reading, v T)) func(r *series.Reading, s string) error {
	seen := make(map[string]T)
	return func(r *series.Reading, s string) error {
		v, ok := seen[s]
		if !ok {
			var err error
			if v, err = parse(s); err != nil {
				return err
			}
			seen[s] = v
		}
		set(r, v)
		return nil
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

package cold

import (
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// A columnSetter sets one column of the i-th row read on a reading, as
// decoder does from Arrow arrays for a scan; it is made from the Parquet
// column's own types, which the typed read decodes without Arrow.
type columnSetter func(i int, r *series.Reading) error

// setterOf returns the setter of v, the values of column descr, or nil
// for a column the declaration does not know.
func setterOf(decl *series.Table, descr *schema.Column, v *columnValues) (columnSetter, error) {
	name := descr.Name()
	str := func(set func(r *series.Reading, s string) error) (columnSetter, error) {
		if v.kind != kindString {
			return nil, fmt.Errorf("column %q: physical type %s, want a string", name, descr.PhysicalType())
		}
		return func(i int, r *series.Reading) error {
			if v.valid != nil && !v.valid[i] {
				return nil
			}
			return set(r, v.strs[i])
		}, nil
	}
	ts := func(set func(r *series.Reading, t time.Time)) (columnSetter, error) {
		lt, ok := descr.LogicalType().(interface{ TimeUnit() schema.TimeUnitType })
		if !ok || v.kind != kindInt {
			return nil, fmt.Errorf("column %q: %s, want a timestamp", name, descr.LogicalType())
		}
		var toTime func(int64) time.Time
		switch lt.TimeUnit() {
		case schema.TimeUnitMillis:
			toTime = time.UnixMilli
		case schema.TimeUnitMicros:
			toTime = time.UnixMicro
		default:
			toTime = func(n int64) time.Time { return time.Unix(0, n) }
		}
		return func(i int, r *series.Reading) error {
			set(r, toTime(v.ints[i]).UTC())
			return nil
		}, nil
	}
	dec := func(scale int32, set func(r *series.Reading, d decimal128.Num) error) (columnSetter, error) {
		lt, ok := descr.LogicalType().(interface{ Scale() int32 })
		if !ok || v.kind != kindDecimal || lt.Scale() != scale {
			return nil, fmt.Errorf("column %q: %s, want a decimal with scale %d", name, descr.LogicalType(), scale)
		}
		return func(i int, r *series.Reading) error { return set(r, v.decs[i]) }, nil
	}
	switch name {
	case "malo_id":
		return str(func(r *series.Reading, s string) error { r.MaLo = s; return nil })
	case "melo_id":
		return str(func(r *series.Reading, s string) error { r.MeLo = s; return nil })
	case "obis_code":
		return str(func(r *series.Reading, s string) error { r.OBIS = s; return nil })
	case "sparte":
		return str(code(metering.ParseCommodity, func(r *series.Reading, c metering.Commodity) { r.Commodity = c }))
	case "from":
		return ts(func(r *series.Reading, t time.Time) { r.From = t })
	case "to":
		return ts(func(r *series.Reading, t time.Time) { r.To = t })
	case "value":
		return dec(6, func(r *series.Reading, d decimal128.Num) error {
			if !fitsInt64(d) {
				return fmt.Errorf("value %s does not fit numeric(18,6)", d.ToString(6))
			}
			r.Value = series.Decimal(d.LowBits())
			return nil
		})
	case "unit":
		return str(code(metering.ParseUnit, func(r *series.Reading, u metering.Unit) { r.Unit = u }))
	case "quality":
		return str(code(metering.ParseQuality, func(r *series.Reading, q metering.Quality) { r.Quality = q }))
	case "resolution":
		return str(code(metering.ParseResolution, func(r *series.Reading, res metering.Resolution) { r.Resolution = res }))
	case "version":
		return dec(0, func(r *series.Reading, d decimal128.Num) error {
			if d.HighBits() != 0 {
				return fmt.Errorf("version %s does not fit numeric(20,0)", d.ToString(0))
			}
			r.Version = d.LowBits()
			return nil
		})
	case "version_scope":
		return str(func(r *series.Reading, s string) error { r.VersionScope = s; return nil })
	case "recorded_at":
		return ts(func(r *series.Reading, t time.Time) { r.RecordedAt = t })
	case "balancing_day":
		if _, ok := descr.LogicalType().(schema.DateLogicalType); !ok || v.kind != kindInt {
			return nil, fmt.Errorf("column %q: %s, want a date", name, descr.LogicalType())
		}
		return func(i int, r *series.Reading) error {
			y, m, d := time.Unix(v.ints[i]*86400, 0).UTC().Date()
			r.BalancingDay = metering.Date{Year: y, Month: m, Day: d}
			return nil
		}, nil
	case "subject_id":
		return str(func(r *series.Reading, s string) error { r.Subject = s; return nil })
	}
	for _, c := range decl.Columns {
		if c.Name != name {
			continue
		}
		if c.Type != series.BigInt {
			return str(func(r *series.Reading, s string) error { setExtra(r, name, s); return nil })
		}
		if v.kind != kindInt {
			return nil, fmt.Errorf("column %q: physical type %s, want an integer", name, descr.PhysicalType())
		}
		return func(i int, r *series.Reading) error {
			if v.valid == nil || v.valid[i] {
				setExtra(r, name, strconv.FormatInt(v.ints[i], 10))
			}
			return nil
		}, nil
	}
	return nil, nil
}

package cold

import (
	"fmt"
	"time"

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
	fld, ok := fieldOf(decl, name)
	switch {
	case !ok:
		return nil, nil
	case fld.str != nil:
		if v.kind != kindString {
			return nil, fmt.Errorf("column %q: physical type %s, want a string", name, descr.PhysicalType())
		}
		return func(i int, r *series.Reading) error {
			if v.valid != nil && !v.valid[i] {
				return nil
			}
			return fld.str(r, v.strs[i])
		}, nil
	case fld.ts != nil:
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
			fld.ts(r, toTime(v.ints[i]).UTC())
			return nil
		}, nil
	case fld.dec != nil:
		lt, ok := descr.LogicalType().(interface{ Scale() int32 })
		if !ok || v.kind != kindDecimal || lt.Scale() != fld.scale {
			return nil, fmt.Errorf("column %q: %s, want a decimal with scale %d", name, descr.LogicalType(), fld.scale)
		}
		return func(i int, r *series.Reading) error { return fld.dec(r, v.decs[i]) }, nil
	case fld.date != nil:
		if _, ok := descr.LogicalType().(schema.DateLogicalType); !ok || v.kind != kindInt {
			return nil, fmt.Errorf("column %q: %s, want a date", name, descr.LogicalType())
		}
		return func(i int, r *series.Reading) error {
			y, m, d := time.Unix(v.ints[i]*86400, 0).UTC().Date()
			fld.date(r, metering.Date{Year: y, Month: m, Day: d})
			return nil
		}, nil
	default:
		if v.kind != kindInt {
			return nil, fmt.Errorf("column %q: physical type %s, want an integer", name, descr.PhysicalType())
		}
		return func(i int, r *series.Reading) error {
			if v.valid == nil || v.valid[i] {
				fld.int(r, v.ints[i])
			}
			return nil
		}, nil
	}
}

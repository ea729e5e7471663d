package cold

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// A field says how the value of one column lands on a reading. Exactly
// one of its setters is set, and which one says the column's type: both
// readers of cold files (a scan's Arrow batches, the typed read's Parquet
// pages) take it from fieldOf, so that a column means the same to each.
type field struct {
	str   func(r *series.Reading, s string) error
	ts    func(r *series.Reading, t time.Time)
	dec   func(r *series.Reading, d decimal128.Num) error
	scale int32 // of dec
	date  func(r *series.Reading, d metering.Date)
	int   func(r *series.Reading, n int64)
}

// fieldOf returns the field of column name of decl's files; ok is false
// for a column the declaration does not know. A code column's setter
// keeps what it parsed, so a field serves one read.
func fieldOf(decl *series.Table, name string) (f field, ok bool) {
	switch name {
	case "malo_id":
		return field{str: func(r *series.Reading, s string) error { r.MaLo = s; return nil }}, true
	case "melo_id":
		return field{str: func(r *series.Reading, s string) error { r.MeLo = s; return nil }}, true
	case "obis_code":
		return field{str: func(r *series.Reading, s string) error { r.OBIS = s; return nil }}, true
	case "sparte":
		return field{str: code(metering.ParseCommodity, func(r *series.Reading, c metering.Commodity) { r.Commodity = c })}, true
	case "from":
		return field{ts: func(r *series.Reading, t time.Time) { r.From = t }}, true
	case "to":
		return field{ts: func(r *series.Reading, t time.Time) { r.To = t }}, true
	case "value":
		return field{scale: 6, dec: func(r *series.Reading, d decimal128.Num) error {
			if !fitsInt64(d) {
				return fmt.Errorf("value %s does not fit numeric(18,6)", d.ToString(6))
			}
			r.Value = series.Decimal(d.LowBits())
			return nil
		}}, true
	case "unit":
		return field{str: code(metering.ParseUnit, func(r *series.Reading, u metering.Unit) { r.Unit = u })}, true
	case "quality":
		return field{str: code(metering.ParseQuality, func(r *series.Reading, q metering.Quality) { r.Quality = q })}, true
	case "resolution":
		return field{str: code(metering.ParseResolution, func(r *series.Reading, res metering.Resolution) { r.Resolution = res })}, true
	case "version":
		return field{scale: 0, dec: func(r *series.Reading, d decimal128.Num) error {
			if d.HighBits() != 0 {
				return fmt.Errorf("version %s does not fit numeric(20,0)", d.ToString(0))
			}
			r.Version = d.LowBits()
			return nil
		}}, true
	case "version_scope":
		return field{str: func(r *series.Reading, s string) error { r.VersionScope = s; return nil }}, true
	case "recorded_at":
		return field{ts: func(r *series.Reading, t time.Time) { r.RecordedAt = t }}, true
	case "balancing_day":
		return field{date: func(r *series.Reading, d metering.Date) { r.BalancingDay = d }}, true
	case "subject_id":
		return field{str: func(r *series.Reading, s string) error { r.Subject = s; return nil }}, true
	}
	for _, c := range decl.Columns {
		if c.Name != name {
			continue
		}
		if c.Type != series.BigInt {
			return field{str: func(r *series.Reading, s string) error { setExtra(r, name, s); return nil }}, true
		}
		return field{int: func(r *series.Reading, n int64) { setExtra(r, name, strconv.FormatInt(n, 10)) }}, true
	}
	return field{}, false
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

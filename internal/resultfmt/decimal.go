package resultfmt

import (
	"strconv"

	"github.com/duckdb/duckdb-go/v2"
)

// A Fixed is a decimal of up to 20 digits held without math/big: Abs
// scaled by 10^-Scale, negative if Neg. It renders as duckdb.Decimal does,
// so that a typed read's answer has the text of the same rows read by SQL
// without an allocation per value.
type Fixed struct {
	Abs   uint64
	Neg   bool
	Scale uint8
}

// FixedInt returns v as a Fixed of scale scale.
func FixedInt(v int64, scale uint8) Fixed {
	if v < 0 {
		return Fixed{Abs: uint64(-(v + 1)) + 1, Neg: true, Scale: scale}
	}
	return Fixed{Abs: uint64(v), Scale: scale}
}

// String renders f as duckdb.Decimal's String does: trailing zeros of the
// fraction dropped, no point for a whole number, "0" for zero.
func (f Fixed) String() string {
	var b [48]byte
	return string(f.Append(b[:0]))
}

// Append appends f's text to b.
func (f Fixed) Append(b []byte) []byte {
	if f.Abs == 0 {
		return append(b, '0')
	}
	if f.Neg {
		b = append(b, '-')
	}
	start := len(b)
	b = strconv.AppendUint(b, f.Abs, 10)
	digits := b[start:]
	n := len(digits)
	for n > 0 && digits[n-1] == '0' {
		n--
	}
	scale := int(f.Scale) - (len(digits) - n)
	if scale <= 0 {
		// The trailing zeros cover the scale: the digits less Scale zeros.
		return b[:start+len(digits)-int(f.Scale)]
	}
	b = b[:start+n] // the fraction's trailing zeros dropped
	if n <= scale {
		var pad [48]byte
		frac := append(pad[:0], b[start:]...)
		b = append(b[:start], '0', '.')
		for range scale - n {
			b = append(b, '0')
		}
		return append(b, frac...)
	}
	b = append(b, 0)
	copy(b[start+n-scale+1:], b[start+n-scale:start+n])
	b[start+n-scale] = '.'
	return b
}

// decimalText renders d as its String does, without math/big's String
// when its value fits 64 bits.
func decimalText(d duckdb.Decimal) string {
	if d.Value == nil {
		return d.String()
	}
	if d.Value.IsInt64() {
		return FixedInt(d.Value.Int64(), d.Scale).String()
	}
	if d.Value.IsUint64() {
		return Fixed{Abs: d.Value.Uint64(), Scale: d.Scale}.String()
	}
	return d.String()
}

package resultfmt

import (
	"math"
	"math/big"
	"testing"

	"github.com/duckdb/duckdb-go/v2"
)

// TestFixedAsDuckDB compares Fixed's and Text's rendering of decimals with
// duckdb.Decimal's own, through math/big, over edge values and scales.
func TestFixedAsDuckDB(t *testing.T) {
	ints := []int64{0, 1, -1, 7, -7, 10, -10, 100, 1000, 1001, -1001, 120, 123456, -123456,
		1_000_000, -1_000_000, 999_999, 1_500_000, -500_000, 999_999_999_999_999_999,
		-999_999_999_999_999_999, math.MaxInt64, math.MinInt64, math.MinInt64 + 1,
		1 << 40, -(1 << 40), 10_000_000_000_000_000_00}
	for _, v := range ints {
		for scale := uint8(0); scale <= 25; scale++ {
			want := duckdb.Decimal{Width: 38, Scale: scale, Value: big.NewInt(v)}.String()
			if got := FixedInt(v, scale).String(); got != want {
				t.Errorf("FixedInt(%d, %d) = %q, want %q", v, scale, got, want)
			}
			d := duckdb.Decimal{Width: 38, Scale: scale, Value: big.NewInt(v)}
			if got := Text(d, "DECIMAL(38,0)"); got != want {
				t.Errorf("Text(%d scale %d) = %q, want %q", v, scale, got, want)
			}
		}
	}
	uints := []uint64{math.MaxUint64, math.MaxUint64 - 1, 1 << 63, 10_000_000_000_000_000_000, 18_000_000_000_000_000_000}
	for _, v := range uints {
		for scale := uint8(0); scale <= 25; scale++ {
			d := duckdb.Decimal{Width: 38, Scale: scale, Value: new(big.Int).SetUint64(v)}
			want := d.String()
			if got := (Fixed{Abs: v, Scale: scale}).String(); got != want {
				t.Errorf("Fixed{%d, %d} = %q, want %q", v, scale, got, want)
			}
			if got := Text(d, ""); got != want {
				t.Errorf("Text(%d scale %d) = %q, want %q", v, scale, got, want)
			}
			neg := new(big.Int).Neg(d.Value)
			want = duckdb.Decimal{Width: 38, Scale: scale, Value: neg}.String()
			if got := (Fixed{Abs: v, Neg: true, Scale: scale}).String(); got != want {
				t.Errorf("-Fixed{%d, %d} = %q, want %q", v, scale, got, want)
			}
		}
	}
	// Beyond 64 bits Text keeps math/big's rendering.
	huge, _ := new(big.Int).SetString("-123456789012345678901234567890", 10)
	d := duckdb.Decimal{Width: 38, Scale: 7, Value: huge}
	if got, want := Text(d, ""), d.String(); got != want {
		t.Errorf("Text(huge) = %q, want %q", got, want)
	}
}

// TestFixedNoAlloc: rendering into a buffer allocates nothing.
func TestFixedNoAlloc(t *testing.T) {
	b := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(100, func() { b = FixedInt(-12_345_600, 6).Append(b[:0]) }); n != 0 {
		t.Errorf("Append allocates %v times", n)
	}
}

// BenchmarkDecimalText compares a reading's value rendered the way the
// typed route did (a duckdb.Decimal through math/big) with a Fixed.
func BenchmarkDecimalText(b *testing.B) {
	b.Run("duckdb.Decimal", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			_ = duckdb.Decimal{Width: 18, Scale: 6, Value: big.NewInt(int64(i) * 1250)}.String()
		}
	})
	b.Run("Fixed", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			_ = Text(FixedInt(int64(i)*1250, 6), "DECIMAL(18,6)")
		}
	})
}

package hot

import (
	"context"
	"errors"
	"testing"
)

// TestDecodeNumeric decodes numerics as PostgreSQL sends them, at the
// scales of value and version, and refuses what they cannot hold.
func TestDecodeNumeric(t *testing.T) {
	_, pool := newTier(t, Options{})
	ctx := context.Background()
	for _, c := range []struct {
		lit   string
		scale int
		neg   bool
		want  uint64
		err   bool
	}{
		{"0", 6, false, 0, false},
		{"1.5", 6, false, 1_500_000, false},
		{"-0.000001", 6, true, 1, false},
		{"123456789012.345678", 6, false, 123456789012345678, false},
		{"10000.01", 6, false, 10_000_010_000, false},
		{"0.0000001", 6, false, 0, true},
		{"18446744073709551615", 0, false, 18446744073709551615, false},
		{"18446744073709551616", 0, false, 0, true},
		{"99990000", 0, false, 99990000, false},
		{"1e20", 0, false, 0, true},
		{"NaN", 0, false, 0, true},
	} {
		var b []byte
		if err := pool.QueryRow(ctx, `SELECT numeric_send($1::numeric)`, c.lit).Scan(&b); err != nil {
			t.Fatal(err)
		}
		neg, u, err := decodeNumeric(b, c.scale)
		switch {
		case c.err && !errors.Is(err, errWire):
			t.Errorf("%s: %v, %d, %v; want an error", c.lit, neg, u, err)
		case !c.err && (err != nil || neg != c.neg || u != c.want):
			t.Errorf("%s at scale %d: %v, %d, %v; want %v, %d", c.lit, c.scale, neg, u, err, c.neg, c.want)
		}
	}
}

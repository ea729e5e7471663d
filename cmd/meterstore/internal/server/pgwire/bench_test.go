package pgwire

import (
	"math/big"
	"testing"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// BenchmarkEncodeRow encodes a row of readings_versions' shape in the
// binary format pgx asks for.
func BenchmarkEncodeRow(b *testing.B) {
	types := []string{"VARCHAR", "VARCHAR", "TIMESTAMP WITH TIME ZONE", "TIMESTAMP WITH TIME ZONE", "DECIMAL(18,6)", "VARCHAR", "VARCHAR", "DECIMAL(20,0)", "TIMESTAMP WITH TIME ZONE"}
	names := make([]string, len(types))
	for i := range names {
		names[i] = "c"
	}
	now := time.Now()
	row := []any{"50000000011", "1-1:1.29.0", now, now, duckdb.Decimal{Width: 18, Scale: 6, Value: big.NewInt(1500000)}, "KWH", "220",
		duckdb.Decimal{Width: 20, Scale: 0, Value: big.NewInt(20260302000000)}, now}
	for _, f := range []int16{0, 1} {
		fs, cols, err := fields(names, types, []int16{f})
		if err != nil {
			b.Fatal(err)
		}
		e := newEncoder(fs, cols)
		b.Run([]string{"text", "binary"}[f], func(b *testing.B) {
			for b.Loop() {
				if _, err := e.row(row); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

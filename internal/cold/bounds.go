package cold

import (
	"encoding/binary"
	"fmt"
	"math/big"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"
)

// checkBounds compares the lower and upper bounds the manifest records of
// data file f with those of its Parquet footer, column by column, for the
// columns stored as integers or decimals (timestamps, dates, integers,
// values, versions): their bounds are exactly the least minimum and the
// greatest maximum of the row groups, which is how the writer computed the
// manifest's. Strings are passed over, their bounds being truncated. It
// returns what differs, "" if nothing does.
func checkBounds(meta *metadata.FileMetaData, f iceberg.DataFile) string {
	lowers, uppers := f.LowerBoundValues(), f.UpperBoundValues()
	for i := range meta.Schema.NumColumns() {
		col := meta.Schema.Column(i)
		id := int(col.SchemaNode().FieldID())
		lower, okL := lowers[id]
		upper, okU := uppers[id]
		if !okL || !okU {
			continue
		}
		_, decimal := col.LogicalType().(schema.DecimalLogicalType)
		phys := col.PhysicalType()
		switch {
		case phys == parquet.Types.Int32 || phys == parquet.Types.Int64:
		case phys == parquet.Types.FixedLenByteArray && decimal:
		default:
			continue
		}
		lo, hi, ok := footerRange(meta, i)
		if !ok {
			continue
		}
		mlo, okL := boundValue(lower, phys, decimal)
		mhi, okU := boundValue(upper, phys, decimal)
		if !okL || !okU {
			continue
		}
		if lo.Cmp(mlo) != 0 || hi.Cmp(mhi) != 0 {
			return fmt.Sprintf("column %s: its footer's values lie in [%s, %s], its manifest records [%s, %s]", col.Name(), lo, hi, mlo, mhi)
		}
	}
	return ""
}

// footerRange returns the least minimum and the greatest maximum of
// column i over the row groups of meta, as integers (a decimal's unscaled
// value); ok is false when a row group has no statistics of it, or no row
// group has a value.
func footerRange(meta *metadata.FileMetaData, i int) (lo, hi *big.Int, ok bool) {
	for r := range meta.NumRowGroups() {
		cc, err := meta.RowGroup(r).ColumnChunk(i)
		if err != nil {
			return nil, nil, false
		}
		st, err := cc.Statistics()
		if err != nil || st == nil {
			return nil, nil, false
		}
		if !st.HasMinMax() {
			continue // every value null
		}
		var min, max *big.Int
		switch s := st.(type) {
		case *metadata.Int32Statistics:
			min, max = big.NewInt(int64(s.Min())), big.NewInt(int64(s.Max()))
		case *metadata.Int64Statistics:
			min, max = big.NewInt(s.Min()), big.NewInt(s.Max())
		case *metadata.FixedLenByteArrayStatistics:
			min, max = signedBigEndian(s.Min()), signedBigEndian(s.Max())
		default:
			return nil, nil, false
		}
		if lo == nil || min.Cmp(lo) < 0 {
			lo = min
		}
		if hi == nil || max.Cmp(hi) > 0 {
			hi = max
		}
	}
	return lo, hi, lo != nil
}

// boundValue decodes an Iceberg bound of a column stored as phys: a
// decimal's unscaled value in big-endian two's complement, an integer
// little-endian.
func boundValue(b []byte, phys parquet.Type, decimal bool) (*big.Int, bool) {
	switch {
	case decimal:
		if len(b) == 0 {
			return nil, false
		}
		return signedBigEndian(b), true
	case phys == parquet.Types.Int32 && len(b) == 4:
		return big.NewInt(int64(int32(binary.LittleEndian.Uint32(b)))), true
	case phys == parquet.Types.Int64 && len(b) == 8:
		return big.NewInt(int64(binary.LittleEndian.Uint64(b))), true
	}
	return nil, false
}

// signedBigEndian decodes b as a big-endian two's complement integer.
func signedBigEndian(b []byte) *big.Int {
	v := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return v
}

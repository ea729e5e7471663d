// Package arrowrows builds Arrow record batches, bounded in rows and bytes,
// from the rows a statement streams (store.Statement.Stream), with the
// read's watermark, tiers and mode in the schema's metadata (Meta), for
// the Arrow answers of meterstore serve: POST /v1/query's Arrow IPC stream
// and Arrow Flight SQL. They are built in Go because duckdb-go's own Arrow
// interface needs the duckdb_arrow build tag, which meterstore is not
// built with.
//
// DuckDB type             Arrow type
// BOOLEAN                 bool
// TINYINT ... BIGINT      int8 ... int64
// UTINYINT ... UBIGINT    uint8 ... uint64
// FLOAT, DOUBLE           float32, float64
// DECIMAL(p,s)            decimal128(p,s)
// VARCHAR, ENUM           utf8
// BLOB                    binary
// DATE                    date32
// TIME                    time64[us]
// TIMESTAMP               timestamp[us]
// TIMESTAMP_S, _MS, _NS   timestamp[s], [ms], [ns]
// TIMESTAMPTZ             timestamp[us, UTC]
// INTERVAL                month_day_nano_interval
// any other type          utf8, the text the CSV answer has for the value
//
// HUGEINT, UHUGEINT and UUID are among the others: a HUGEINT can have 39
// digits, more than decimal128(38,0) holds, so it is its exact decimal
// text; a UUID is its canonical text.
package arrowrows

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/meterstore/meterstore/internal/resultfmt"
)

// A batch is due when a Builder holds BatchRows rows or about BatchBytes
// bytes of variable-length values, whichever comes first: that bounds
// what it holds.
const (
	BatchRows  = 8192
	BatchBytes = 8 << 20
)

// The keys of the schema's metadata: the watermark (RFC 3339, empty when
// none was read), the tiers read (comma-separated) and the read mode (auto,
// historical or operational), as the HTTP headers X-MeterStore-Watermark,
// X-MeterStore-Tiers and X-MeterStore-Mode have them.
const (
	MetaWatermark = "meterstore.watermark"
	MetaTiers     = "meterstore.tiers"
	MetaMode      = "meterstore.mode"
)

// A Meta is what a schema's metadata says of the read: its watermark,
// tiers and mode.
type Meta struct {
	Watermark, Tiers, Mode string
}

// arrowColumn is the Arrow type of a column of DuckDB type typ, and how a
// value of it is appended to the column's builder.
type arrowColumn struct {
	typ    arrow.DataType
	append func(b array.Builder, v any) (int, error) // the bytes appended beyond the fixed width
}

// arrowType returns the Arrow column of the DuckDB type named typ.
func arrowType(typ string) arrowColumn {
	fixed := func(dt arrow.DataType, f func(b array.Builder, v any) bool) arrowColumn {
		return arrowColumn{dt, func(b array.Builder, v any) (int, error) {
			if !f(b, v) {
				return 0, fmt.Errorf("a %T in a column of type %s", v, typ)
			}
			return 0, nil
		}}
	}
	switch typ {
	case "BOOLEAN":
		return fixed(arrow.FixedWidthTypes.Boolean, appendAs[bool, *array.BooleanBuilder])
	case "TINYINT":
		return fixed(arrow.PrimitiveTypes.Int8, appendAs[int8, *array.Int8Builder])
	case "SMALLINT":
		return fixed(arrow.PrimitiveTypes.Int16, appendAs[int16, *array.Int16Builder])
	case "INTEGER":
		return fixed(arrow.PrimitiveTypes.Int32, appendAs[int32, *array.Int32Builder])
	case "BIGINT":
		return fixed(arrow.PrimitiveTypes.Int64, appendAs[int64, *array.Int64Builder])
	case "UTINYINT":
		return fixed(arrow.PrimitiveTypes.Uint8, appendAs[uint8, *array.Uint8Builder])
	case "USMALLINT":
		return fixed(arrow.PrimitiveTypes.Uint16, appendAs[uint16, *array.Uint16Builder])
	case "UINTEGER":
		return fixed(arrow.PrimitiveTypes.Uint32, appendAs[uint32, *array.Uint32Builder])
	case "UBIGINT":
		return fixed(arrow.PrimitiveTypes.Uint64, appendAs[uint64, *array.Uint64Builder])
	case "FLOAT":
		return fixed(arrow.PrimitiveTypes.Float32, appendAs[float32, *array.Float32Builder])
	case "DOUBLE":
		return fixed(arrow.PrimitiveTypes.Float64, appendAs[float64, *array.Float64Builder])
	case "VARCHAR", "ENUM":
		return arrowColumn{arrow.BinaryTypes.String, func(b array.Builder, v any) (int, error) {
			s, ok := v.(string)
			if !ok {
				s = resultfmt.Text(v, typ)
			}
			b.(*array.StringBuilder).Append(s)
			return len(s), nil
		}}
	case "BLOB":
		return arrowColumn{arrow.BinaryTypes.Binary, func(b array.Builder, v any) (int, error) {
			x, ok := v.([]byte)
			if !ok {
				return 0, fmt.Errorf("a %T in a column of type %s", v, typ)
			}
			b.(*array.BinaryBuilder).Append(x)
			return len(x), nil
		}}
	case "DATE":
		return fixed(arrow.FixedWidthTypes.Date32, func(b array.Builder, v any) bool {
			t, ok := v.(time.Time)
			if ok {
				y, m, d := t.Date()
				days := time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400
				b.(*array.Date32Builder).Append(arrow.Date32(days))
			}
			return ok
		})
	case "TIME":
		return fixed(arrow.FixedWidthTypes.Time64us, func(b array.Builder, v any) bool {
			t, ok := v.(time.Time)
			if ok {
				us := int64(t.Hour())*3600e6 + int64(t.Minute())*60e6 + int64(t.Second())*1e6 + int64(t.Nanosecond())/1e3
				b.(*array.Time64Builder).Append(arrow.Time64(us))
			}
			return ok
		})
	case "TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS", "TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE":
		dt := &arrow.TimestampType{Unit: arrow.Microsecond}
		switch typ {
		case "TIMESTAMP_S":
			dt.Unit = arrow.Second
		case "TIMESTAMP_MS":
			dt.Unit = arrow.Millisecond
		case "TIMESTAMP_NS":
			dt.Unit = arrow.Nanosecond
		case "TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE":
			dt.TimeZone = "UTC"
		}
		return fixed(dt, func(b array.Builder, v any) bool {
			t, ok := v.(time.Time)
			if ok {
				var n int64
				switch dt.Unit {
				case arrow.Second:
					n = t.Unix()
				case arrow.Millisecond:
					n = t.UnixMilli()
				case arrow.Nanosecond:
					n = t.UnixNano()
				default:
					n = t.UnixMicro()
				}
				b.(*array.TimestampBuilder).Append(arrow.Timestamp(n))
			}
			return ok
		})
	case "INTERVAL":
		return fixed(arrow.FixedWidthTypes.MonthDayNanoInterval, func(b array.Builder, v any) bool {
			x, ok := v.(duckdb.Interval)
			if ok {
				b.(*array.MonthDayNanoIntervalBuilder).Append(arrow.MonthDayNanoInterval{
					Months: x.Months, Days: x.Days, Nanoseconds: x.Micros * 1000})
			}
			return ok
		})
	}
	if p, s, ok := decimalType(typ); ok {
		return fixed(&arrow.Decimal128Type{Precision: p, Scale: s}, func(b array.Builder, v any) bool {
			switch x := v.(type) {
			case duckdb.Decimal:
				n := x.Value
				if n == nil {
					n = new(big.Int)
				}
				b.(*array.Decimal128Builder).Append(decimal128.FromBigInt(n))
			case resultfmt.Fixed:
				n := decimal128.FromU64(x.Abs)
				if x.Neg {
					n = n.Negate()
				}
				b.(*array.Decimal128Builder).Append(n)
			default:
				return false
			}
			return true
		})
	}
	return arrowColumn{arrow.BinaryTypes.String, func(b array.Builder, v any) (int, error) {
		s := resultfmt.Text(v, typ)
		b.(*array.StringBuilder).Append(s)
		return len(s), nil
	}}
}

// appendAs appends v, a T, to a builder of T.
func appendAs[T any, B interface{ Append(T) }](b array.Builder, v any) bool {
	x, ok := v.(T)
	if ok {
		b.(B).Append(x)
	}
	return ok
}

// decimalType parses DECIMAL(p,s).
func decimalType(typ string) (p, s int32, ok bool) {
	args, found := strings.CutPrefix(typ, "DECIMAL(")
	if args, found = strings.CutSuffix(args, ")"); !found {
		return 0, 0, false
	}
	ps, ss, found := strings.Cut(args, ",")
	pi, err1 := strconv.Atoi(strings.TrimSpace(ps))
	si, err2 := strconv.Atoi(strings.TrimSpace(ss))
	if !found || err1 != nil || err2 != nil || pi < 1 || pi > 38 || si < 0 || si > pi {
		return 0, 0, false
	}
	return int32(pi), int32(si), true
}

// A Builder collects streamed rows into record batches of one schema.
type Builder struct {
	schema *arrow.Schema
	b      *array.RecordBuilder
	cols   []arrowColumn
	rows   int
	bytes  int
}

// NewBuilder returns a Builder of rows with columns of the DuckDB types
// types, and m in the schema's metadata (see MetaWatermark, MetaTiers and
// MetaMode; a mode left empty is auto). Release it when done.
func NewBuilder(columns, types []string, m Meta) *Builder {
	b := &Builder{cols: make([]arrowColumn, len(columns))}
	fields := make([]arrow.Field, len(columns))
	for i, name := range columns {
		b.cols[i] = arrowType(resultfmt.Type(types, i))
		fields[i] = arrow.Field{Name: name, Type: b.cols[i].typ, Nullable: true}
	}
	if m.Mode == "" {
		m.Mode = "auto"
	}
	md := arrow.NewMetadata([]string{MetaWatermark, MetaTiers, MetaMode}, []string{m.Watermark, m.Tiers, m.Mode})
	b.schema = arrow.NewSchema(fields, &md)
	b.b = array.NewRecordBuilder(memory.NewGoAllocator(), b.schema)
	return b
}

// Schema returns the schema of the batches.
func (b *Builder) Schema() *arrow.Schema { return b.schema }

// Append adds a row, values as duckdb-go returns them, and reports whether
// a batch is due: BatchRows rows or about BatchBytes bytes held. An error
// is a value the column's type cannot hold; the row is then partly
// appended, and the Builder is good only for Release.
func (b *Builder) Append(vals []any) (full bool, err error) {
	for i, v := range vals {
		fb := b.b.Field(i)
		if v == nil {
			fb.AppendNull()
			continue
		}
		n, err := b.cols[i].append(fb, v)
		if err != nil {
			return false, fmt.Errorf("column %d: %w", i+1, err)
		}
		b.bytes += n
	}
	b.rows++
	return b.rows >= BatchRows || b.bytes >= BatchBytes, nil
}

// Len returns the number of rows held.
func (b *Builder) Len() int { return b.rows }

// NewBatch returns the rows held as a record batch, which the caller
// releases, and starts the next.
func (b *Builder) NewBatch() arrow.RecordBatch {
	b.rows, b.bytes = 0, 0
	return b.b.NewRecordBatch()
}

// Release frees what the Builder holds.
func (b *Builder) Release() { b.b.Release() }

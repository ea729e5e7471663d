package pgwire

import (
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/meterstore/meterstore/internal/resultfmt"
)

// A column is how one result column of DuckDB type typ goes over the
// wire: its type OID, size and modifier as PostgreSQL describes them.
type column struct {
	typ    string // the DuckDB type name
	oid    uint32
	size   int16
	typmod int32
}

// columnOf maps a DuckDB type name to the PostgreSQL type drivers decode
// it as. A type without a PostgreSQL peer (LIST, STRUCT, MAP, ENUM, UNION,
// TIME WITH TIME ZONE, BIT) goes as text, its value rendered as meterstore
// query prints it.
func columnOf(typ string) column {
	c := column{typ: typ, oid: pgtype.TextOID, size: -1, typmod: -1}
	switch {
	case typ == "VARCHAR":
	case typ == "BIGINT":
		c.oid, c.size = pgtype.Int8OID, 8
	case typ == "INTEGER", typ == "USMALLINT", typ == "UTINYINT":
		c.oid, c.size = pgtype.Int4OID, 4
	case typ == "SMALLINT", typ == "TINYINT":
		c.oid, c.size = pgtype.Int2OID, 2
	case typ == "UINTEGER":
		c.oid, c.size = pgtype.Int8OID, 8
	case typ == "DOUBLE":
		c.oid, c.size = pgtype.Float8OID, 8
	case typ == "FLOAT":
		c.oid, c.size = pgtype.Float4OID, 4
	case typ == "BOOLEAN":
		c.oid, c.size = pgtype.BoolOID, 1
	case typ == "DATE":
		c.oid, c.size = pgtype.DateOID, 4
	case typ == "TIME":
		c.oid, c.size = pgtype.TimeOID, 8
	case typ == "TIMESTAMP", typ == "TIMESTAMP_NS", typ == "TIMESTAMP_MS", typ == "TIMESTAMP_S":
		c.oid, c.size = pgtype.TimestampOID, 8
	case typ == "TIMESTAMP WITH TIME ZONE", typ == "TIMESTAMPTZ":
		c.oid, c.size = pgtype.TimestamptzOID, 8
	case typ == "HUGEINT", typ == "UHUGEINT", typ == "UBIGINT":
		c.oid = pgtype.NumericOID
	case strings.HasPrefix(typ, "DECIMAL("):
		c.oid = pgtype.NumericOID
		var p, s int32
		if _, err := fmt.Sscanf(typ, "DECIMAL(%d,%d)", &p, &s); err == nil {
			c.typmod = p<<16 | s + 4 // as PostgreSQL's numeric typmod
		}
	case typ == "INTERVAL":
		c.oid, c.size = pgtype.IntervalOID, 16
	case typ == "UUID":
		c.oid, c.size = pgtype.UUIDOID, 16
	case typ == "BLOB":
		c.oid = pgtype.ByteaOID
	}
	return c
}

// fields returns the row description of columns names of DuckDB types
// types, each column in the format formats gives it (Bind's result
// format codes: none for text, one for all, or one each).
func fields(names, types []string, formats []int16) ([]pgproto3.FieldDescription, []column, error) {
	fs := make([]pgproto3.FieldDescription, len(names))
	cols := make([]column, len(names))
	for i, name := range names {
		cols[i] = columnOf(resultfmt.Type(types, i))
		f, err := formatOf(formats, i, len(names))
		if err != nil {
			return nil, nil, err
		}
		fs[i] = pgproto3.FieldDescription{Name: []byte(name), DataTypeOID: cols[i].oid,
			DataTypeSize: cols[i].size, TypeModifier: cols[i].typmod, Format: f}
	}
	return fs, cols, nil
}

// formatOf returns the format of value i of n under format codes codes
// (none: text, one: all, else one each).
func formatOf(codes []int16, i, n int) (int16, error) {
	var f int16
	switch len(codes) {
	case 0:
	case 1:
		f = codes[0]
	case n:
		f = codes[i]
	default:
		return 0, protocolError("%d format codes for %d values", len(codes), n)
	}
	if f != pgtype.TextFormatCode && f != pgtype.BinaryFormatCode {
		return 0, protocolError("format code %d: want 0 (text) or 1 (binary)", f)
	}
	return f, nil
}

// An encoder renders rows of a result in their columns' formats.
type encoder struct {
	m      *pgtype.Map
	cols   []column
	fields []pgproto3.FieldDescription
}

// newEncoder returns the encoder of rows described by fs of columns cols.
// Its map is its own: a pgtype.Map is not safe for concurrent use, and
// two portals may stream at once.
func newEncoder(fs []pgproto3.FieldDescription, cols []column) *encoder {
	return &encoder{m: pgtype.NewMap(), cols: cols, fields: fs}
}

// row encodes vals, values as duckdb-go returns them, into a fresh row
// the caller may keep: nil for NULL.
func (e *encoder) row(vals []any) ([][]byte, error) {
	out := make([][]byte, len(vals))
	for i, v := range vals {
		if v == nil {
			continue
		}
		if i >= len(e.cols) {
			return nil, fmt.Errorf("pgwire: a row of %d values for %d columns", len(vals), len(e.cols))
		}
		c := e.cols[i]
		pv, err := wireValue(v, c)
		if err != nil {
			return nil, fmt.Errorf("pgwire: column %s: %w", e.fields[i].Name, err)
		}
		if c.oid == pgtype.TimestamptzOID && e.fields[i].Format == pgtype.TextFormatCode {
			out[i] = timestamptzText(pv.(pgtype.Timestamptz))
			continue
		}
		b, err := e.m.Encode(c.oid, e.fields[i].Format, pv, []byte{})
		if err != nil {
			return nil, fmt.Errorf("pgwire: column %s (%s): %w", e.fields[i].Name, c.typ, err)
		}
		out[i] = b
	}
	return out, nil
}

// Far-off times: duckdb-go returns DuckDB's infinite timestamps and dates
// as the extreme values of their representations.
var (
	farFuture = time.Date(200000, 1, 1, 0, 0, 0, 0, time.UTC)
	farPast   = time.Date(-200000, 1, 1, 0, 0, 0, 0, time.UTC)
)

// wireValue converts v, of column c, to the value pgtype encodes as c's
// type.
func wireValue(v any, c column) (any, error) {
	switch c.oid {
	case pgtype.TextOID:
		if s, ok := v.(string); ok {
			return s, nil
		}
		return resultfmt.Text(v, c.typ), nil
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID:
		return toInt64(v)
	case pgtype.NumericOID:
		return toNumeric(v)
	case pgtype.Float4OID:
		if f, ok := v.(float32); ok {
			return f, nil
		}
	case pgtype.Float8OID:
		if f, ok := v.(float64); ok {
			return f, nil
		}
	case pgtype.DateOID:
		if t, ok := v.(time.Time); ok {
			return pgtype.Date{Time: t, InfinityModifier: infinity(t), Valid: true}, nil
		}
	case pgtype.TimestampOID:
		if t, ok := v.(time.Time); ok {
			return pgtype.Timestamp{Time: t.UTC(), InfinityModifier: infinity(t), Valid: true}, nil
		}
	case pgtype.TimestamptzOID:
		if t, ok := v.(time.Time); ok {
			return pgtype.Timestamptz{Time: t, InfinityModifier: infinity(t), Valid: true}, nil
		}
	case pgtype.TimeOID:
		if t, ok := v.(time.Time); ok {
			h, m, s := t.Clock()
			us := (int64(h)*3600+int64(m)*60+int64(s))*1e6 + int64(t.Nanosecond()/1000)
			return pgtype.Time{Microseconds: us, Valid: true}, nil
		}
	case pgtype.IntervalOID:
		if x, ok := v.(duckdb.Interval); ok {
			return pgtype.Interval{Months: x.Months, Days: x.Days, Microseconds: x.Micros, Valid: true}, nil
		}
	case pgtype.UUIDOID:
		switch x := v.(type) {
		case []byte:
			if len(x) == 16 {
				return pgtype.UUID{Bytes: [16]byte(x), Valid: true}, nil
			}
		case duckdb.UUID:
			return pgtype.UUID{Bytes: x, Valid: true}, nil
		case *duckdb.UUID:
			return pgtype.UUID{Bytes: *x, Valid: true}, nil
		case string:
			var u pgtype.UUID
			err := u.Scan(x)
			return u, err
		}
	default:
		return v, nil
	}
	return v, nil // pgtype says what it cannot encode
}

// timestamptzText renders t as PostgreSQL does with TimeZone UTC, its
// offset +00: pgtype writes a Z, which pgjdbc refuses ("Trailing junk on
// timestamp").
func timestamptzText(t pgtype.Timestamptz) []byte {
	switch t.InfinityModifier {
	case pgtype.Infinity:
		return []byte("infinity")
	case pgtype.NegativeInfinity:
		return []byte("-infinity")
	}
	u := t.Time.UTC()
	if u.Year() <= 0 {
		return []byte(u.AddDate(-2*u.Year()+1, 0, 0).Format("2006-01-02 15:04:05.999999") + "+00 BC")
	}
	return []byte(u.Format("2006-01-02 15:04:05.999999") + "+00")
}

// infinity returns the infinity of a far-off time t, Finite otherwise.
func infinity(t time.Time) pgtype.InfinityModifier {
	switch {
	case t.After(farFuture):
		return pgtype.Infinity
	case t.Before(farPast):
		return pgtype.NegativeInfinity
	}
	return pgtype.Finite
}

// toInt64 widens an integer duckdb-go returns.
func toInt64(v any) (any, error) {
	switch x := v.(type) {
	case int8:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case int64:
		return x, nil
	case uint8:
		return int64(x), nil
	case uint16:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	}
	return nil, fmt.Errorf("%T is not an integer", v)
}

// toNumeric returns a decimal or wide integer as a pgtype.Numeric, never
// through a float.
func toNumeric(v any) (pgtype.Numeric, error) {
	switch x := v.(type) {
	case duckdb.Decimal:
		if x.Value == nil {
			return pgtype.Numeric{}, fmt.Errorf("a decimal without a value")
		}
		return pgtype.Numeric{Int: x.Value, Exp: -int32(x.Scale), Valid: true}, nil
	case *big.Int:
		return pgtype.Numeric{Int: x, Valid: true}, nil
	case uint64:
		return pgtype.Numeric{Int: new(big.Int).SetUint64(x), Valid: true}, nil
	case int64:
		return pgtype.Numeric{Int: big.NewInt(x), Valid: true}, nil
	case string:
		var n pgtype.Numeric
		err := n.Scan(x)
		return n, err
	}
	return pgtype.Numeric{}, fmt.Errorf("%T is not a number", v)
}

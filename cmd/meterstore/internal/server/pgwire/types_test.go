package pgwire

import (
	"math/big"
	"reflect"
	"testing"
	"time"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/jackc/pgx/v5/pgtype"
)

// TestEncodeDecode: each DuckDB type, as duckdb-go returns its values,
// goes as the PostgreSQL type drivers map it to, and pgx decodes what
// was sent, text and binary, to the same value.
func TestEncodeDecode(t *testing.T) {
	ts := time.Date(2026, 3, 1, 23, 15, 0, 123456000, time.UTC)
	for _, tc := range []struct {
		typ   string
		v     any
		oid   uint32
		want  any // as pgx decodes it into want's type
		wantT string
	}{
		{"VARCHAR", "Zählpunkt", pgtype.TextOID, "Zählpunkt", "Zählpunkt"},
		{"BIGINT", int64(-7), pgtype.Int8OID, int64(-7), "-7"},
		{"INTEGER", int32(7), pgtype.Int4OID, int32(7), "7"},
		{"SMALLINT", int16(7), pgtype.Int2OID, int16(7), "7"},
		{"UINTEGER", uint32(4000000000), pgtype.Int8OID, int64(4000000000), "4000000000"},
		{"DOUBLE", 1.5, pgtype.Float8OID, 1.5, "1.5"},
		{"FLOAT", float32(0.25), pgtype.Float4OID, float32(0.25), "0.25"},
		{"BOOLEAN", true, pgtype.BoolOID, true, "t"},
		{"DATE", time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), pgtype.DateOID, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), "2026-03-01"},
		{"TIMESTAMP WITH TIME ZONE", ts, pgtype.TimestamptzOID, ts, "2026-03-01 23:15:00.123456+00"},
		{"TIMESTAMP", ts, pgtype.TimestampOID, ts, "2026-03-01 23:15:00.123456"},
		{"DECIMAL(18,6)", duckdb.Decimal{Width: 18, Scale: 6, Value: big.NewInt(-1500000)}, pgtype.NumericOID, "-1.500000", "-1.500000"},
		{"HUGEINT", new(big.Int).Lsh(big.NewInt(1), 100), pgtype.NumericOID, "1267650600228229401496703205376", "1267650600228229401496703205376"},
		{"UBIGINT", uint64(1 << 63), pgtype.NumericOID, "9223372036854775808", "9223372036854775808"},
		{"INTERVAL", duckdb.Interval{Months: 1, Days: 2, Micros: 3_000_000}, pgtype.IntervalOID, pgtype.Interval{Months: 1, Days: 2, Microseconds: 3_000_000, Valid: true}, "1 mon 2 day 00:00:03"},
		{"UUID", []byte{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0}, pgtype.UUIDOID,
			"12345678-9abc-def0-1234-56789abcdef0", "12345678-9abc-def0-1234-56789abcdef0"},
		{"BLOB", []byte{0, 1, 255}, pgtype.ByteaOID, []byte{0, 1, 255}, `\x0001ff`},
		{"INTEGER[]", []any{int32(1), int32(2)}, pgtype.TextOID, "[1 2]", "[1 2]"},
	} {
		for _, format := range []int16{pgtype.TextFormatCode, pgtype.BinaryFormatCode} {
			fs, cols, err := fields([]string{"c"}, []string{tc.typ}, []int16{format})
			if err != nil {
				t.Fatal(err)
			}
			if fs[0].DataTypeOID != tc.oid {
				t.Errorf("%s: OID %d, want %d", tc.typ, fs[0].DataTypeOID, tc.oid)
				continue
			}
			row, err := newEncoder(fs, cols).row([]any{tc.v})
			if err != nil {
				t.Errorf("%s (format %d): %v", tc.typ, format, err)
				continue
			}
			if format == pgtype.TextFormatCode && string(row[0]) != tc.wantT {
				t.Errorf("%s as text: %q, want %q", tc.typ, row[0], tc.wantT)
			}
			m := pgtype.NewMap()
			switch want := tc.want.(type) {
			case string:
				var got string
				if tc.oid == pgtype.NumericOID {
					var n pgtype.Numeric
					err = m.Scan(tc.oid, format, row[0], &n)
					v, _ := n.Value()
					got, _ = v.(string)
				} else {
					err = m.Scan(tc.oid, format, row[0], &got)
				}
				if err != nil || got != want {
					t.Errorf("%s (format %d) decoded: %q, %v; want %q", tc.typ, format, got, err, want)
				}
			case time.Time:
				var got time.Time
				if err := m.Scan(tc.oid, format, row[0], &got); err != nil || !got.Equal(want) && !(tc.oid == pgtype.TimestampOID && got.Format(time.DateTime) == want.Format(time.DateTime)) {
					t.Errorf("%s (format %d) decoded: %v, %v; want %v", tc.typ, format, got, err, want)
				}
			default:
				got := reflect.New(reflect.TypeOf(want))
				if err := m.Scan(tc.oid, format, row[0], got.Interface()); err != nil || !reflect.DeepEqual(got.Elem().Interface(), want) {
					t.Errorf("%s (format %d) decoded: %v, %v; want %v", tc.typ, format, got.Elem().Interface(), err, want)
				}
			}
		}
	}
	fs, cols, _ := fields([]string{"c"}, []string{"DATE"}, nil)
	if row, _ := newEncoder(fs, cols).row([]any{nil}); row[0] != nil {
		t.Errorf("NULL encoded as %q", row[0])
	}
}

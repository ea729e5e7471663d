// Package pgnum sends fixed-point numbers to PostgreSQL as binary numeric
// without going through math/big.
//
// pgx encodes numeric parameters through big.Int, which costs allocations and
// a division per value. Bulk writes send two numerics per row, so the client
// spends more time encoding them than the server spends storing them. The
// types here carry their scale in the type and encode with integer arithmetic.
// Register installs the codec on a connection's type map; every other value
// is handed to pgx's own numeric codec unchanged.
package pgnum

import (
	"encoding/binary"

	"github.com/jackc/pgx/v5/pgtype"
)

// Micro is a decimal number counted in millionths, sent as numeric with scale 6.
type Micro int64

// Uint is an unsigned integer, sent as numeric with scale 0. Unlike int64 it
// reaches the 20 digits of numeric(20,0) up to 18446744073709551615.
type Uint uint64

// Register installs the codec for numeric in m. It is idempotent.
func Register(m *pgtype.Map) {
	if t, ok := m.TypeForOID(pgtype.NumericOID); ok {
		if _, ok := t.Codec.(codec); ok {
			return
		}
	}
	m.RegisterType(&pgtype.Type{Name: "numeric", OID: pgtype.NumericOID, Codec: codec{}})
}

type codec struct{ pgtype.NumericCodec }

func (c codec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if format == pgtype.BinaryFormatCode {
		switch value.(type) {
		case Micro:
			return microPlan{}
		case Uint:
			return uintPlan{}
		}
	}
	// Pointers to Micro and Uint come back here dereferenced through pgx's
	// wrapper plans, because the standard codec declines them.
	return c.NumericCodec.PlanEncode(m, oid, format, value)
}

type microPlan struct{}

func (microPlan) Encode(value any, buf []byte) ([]byte, error) {
	return AppendMicro(buf, value.(Micro)), nil
}

// AppendMicro appends m in the binary numeric format, without its length.
func AppendMicro(buf []byte, m Micro) []byte {
	v := int64(m)
	var sign uint16
	a := uint64(v)
	if v < 0 {
		sign = 0x4000
		a = uint64(-v) // -MinInt64 wraps to itself, which is 2^63 as uint64
	}
	// Scale 6 is one and a half base-10000 digits: the fraction is
	// written as two groups, the second padded by a factor of 100.
	ip, fp := a/1_000_000, a%1_000_000
	var groups [8]uint16 // 5 integer groups hold up to 10^20 > 2^64/10^6
	n := 0
	for x := ip; x > 0; x /= 10000 {
		n++
	}
	weight := n - 1
	for i, x := n-1, ip; i >= 0; i, x = i-1, x/10000 {
		groups[i] = uint16(x % 10000)
	}
	groups[n] = uint16(fp / 100)
	groups[n+1] = uint16(fp % 100 * 100)
	return appendNumeric(buf, groups[:n+2], weight, sign, 6)
}

type uintPlan struct{}

func (uintPlan) Encode(value any, buf []byte) ([]byte, error) {
	return AppendUint(buf, value.(Uint)), nil
}

// AppendUint appends u in the binary numeric format, without its length.
func AppendUint(buf []byte, u Uint) []byte {
	v := uint64(u)
	var groups [5]uint16
	n := 0
	for x := v; x > 0; x /= 10000 {
		n++
	}
	for i, x := n-1, v; i >= 0; i, x = i-1, x/10000 {
		groups[i] = uint16(x % 10000)
	}
	return appendNumeric(buf, groups[:n], n-1, 0, 0)
}

// appendNumeric writes the binary numeric format: ndigits, weight, sign and
// display scale as 16-bit integers, then the base-10000 digits, most
// significant first. Leading and trailing zero digits are dropped, as the
// server does, so equal values are sent identically.
func appendNumeric(buf []byte, digits []uint16, weight int, sign uint16, dscale int16) []byte {
	for len(digits) > 0 && digits[0] == 0 {
		digits = digits[1:]
		weight--
	}
	for len(digits) > 0 && digits[len(digits)-1] == 0 {
		digits = digits[:len(digits)-1]
	}
	if len(digits) == 0 {
		weight, sign = 0, 0
	}
	buf = binary.BigEndian.AppendUint16(buf, uint16(len(digits)))
	buf = binary.BigEndian.AppendUint16(buf, uint16(int16(weight)))
	buf = binary.BigEndian.AppendUint16(buf, sign)
	buf = binary.BigEndian.AppendUint16(buf, uint16(dscale))
	for _, d := range digits {
		buf = binary.BigEndian.AppendUint16(buf, d)
	}
	return buf
}

package hot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// PostgreSQL's binary wire formats of the types a Read decodes, and the
// OIDs that name them in a result's description.
const (
	oidInt4        = 23
	oidInt8        = 20
	oidText        = 25
	oidDate        = 1082
	oidTimestamptz = 1184
	oidNumeric     = 1700
)

// kindOID is the type a column of a kind has on the wire.
var kindOID = map[Kind]uint32{KindText: oidText, KindInt32: oidInt4, KindInt64: oidInt8,
	KindTime: oidTimestamptz, KindDate: oidDate, KindDecimal: oidNumeric, KindUint64: oidNumeric}

// PostgreSQL counts time from 2000-01-01 UTC.
const (
	pgEpochMicros = 946_684_800_000_000
	pgEpochDays   = 10_957
)

// decimalScale is the scale of KindDecimal, value's numeric(18,6).
const decimalScale = 6

var pow10 = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

var errWire = errors.New("malformed value")

// decodeInt returns the value of a column of kind k, but KindText and
// KindUint64, from its binary form b.
func decodeInt(k Kind, b []byte) (int64, error) {
	switch k {
	case KindInt32:
		if len(b) != 4 {
			return 0, errWire
		}
		return int64(int32(binary.BigEndian.Uint32(b))), nil
	case KindInt64:
		if len(b) != 8 {
			return 0, errWire
		}
		return int64(binary.BigEndian.Uint64(b)), nil
	case KindTime:
		if len(b) != 8 {
			return 0, errWire
		}
		us := int64(binary.BigEndian.Uint64(b))
		if us == math.MaxInt64 || us == math.MinInt64 || us > math.MaxInt64-pgEpochMicros {
			return 0, fmt.Errorf("timestamp out of range: %w", errWire)
		}
		return us + pgEpochMicros, nil
	case KindDate:
		if len(b) != 4 {
			return 0, errWire
		}
		d := int32(binary.BigEndian.Uint32(b))
		if d == math.MaxInt32 || d == math.MinInt32 {
			return 0, fmt.Errorf("date out of range: %w", errWire)
		}
		return int64(d) + pgEpochDays, nil
	case KindDecimal:
		neg, u, err := decodeNumeric(b, decimalScale)
		if err != nil {
			return 0, err
		}
		if u > math.MaxInt64 {
			return 0, fmt.Errorf("numeric out of range: %w", errWire)
		}
		if neg {
			return -int64(u), nil
		}
		return int64(u), nil
	}
	return 0, fmt.Errorf("kind %d is not an integer", k)
}

// decodeUint returns a KindUint64 value from its binary form: a numeric
// of scale 0 from 0 to 2⁶⁴−1.
func decodeUint(b []byte) (uint64, error) {
	neg, u, err := decodeNumeric(b, 0)
	if err == nil && neg && u != 0 {
		err = fmt.Errorf("negative numeric: %w", errWire)
	}
	return u, err
}

// decodeNumeric returns the sign and the unscaled magnitude at scale of a
// numeric in binary form: a header of digit count, weight, sign and
// display scale, then base-10000 digits, the first of weight weight. A
// value with more decimals than scale, beyond 2⁶⁴−1 unscaled, or not
// finite is an error.
func decodeNumeric(b []byte, scale int) (neg bool, u uint64, err error) {
	if len(b) < 8 {
		return false, 0, errWire
	}
	n := int(binary.BigEndian.Uint16(b))
	weight := int(int16(binary.BigEndian.Uint16(b[2:])))
	sign := binary.BigEndian.Uint16(b[4:])
	if len(b) != 8+2*n {
		return false, 0, errWire
	}
	switch sign {
	case 0x0000:
	case 0x4000:
		neg = true
	default:
		return false, 0, fmt.Errorf("numeric not finite: %w", errWire)
	}
	for i := range n {
		d := uint64(binary.BigEndian.Uint16(b[8+2*i:]))
		if d >= 10000 {
			return false, 0, errWire
		}
		e := 4*(weight-i) + scale
		switch {
		case d == 0:
			continue
		case e < 0:
			if e < -4 || d%pow10[-e] != 0 {
				return false, 0, fmt.Errorf("numeric has more than %d decimals: %w", scale, errWire)
			}
			d /= pow10[-e]
		case e >= len(pow10):
			return false, 0, fmt.Errorf("numeric out of range: %w", errWire)
		default:
			hi, lo := bits.Mul64(d, pow10[e])
			if hi != 0 {
				return false, 0, fmt.Errorf("numeric out of range: %w", errWire)
			}
			d = lo
		}
		var carry uint64
		u, carry = bits.Add64(u, d, 0)
		if carry != 0 {
			return false, 0, fmt.Errorf("numeric out of range: %w", errWire)
		}
	}
	return neg, u, nil
}

package metering

import (
	"fmt"
	"strconv"
)

// An OBIS is an OBIS code (IEC 62056-61) naming what a value measures, such
// as 1-0:1.8.0 for imported active energy. The six groups A to F each hold
// 0 to 255. F is 255 when a code is written without it, so set F to 255 when
// building such a code by hand.
type OBIS struct {
	A, B, C, D, E, F uint8
}

// ParseOBIS parses "A-B:C.D.E" or "A-B:C.D.E*F" with decimal groups of 0 to
// 255. Leading zeros, wildcards, the '&' separator and abbreviated forms are
// rejected: stored codes are keys, and each needs one spelling.
func ParseOBIS(s string) (OBIS, error) {
	const (
		kind   = "OBIS code"
		groups = "ABCDEF"
		seps   = "-:..*" // the separator that follows each group
	)
	g := [6]uint8{5: 255}
	rest := s
	for i := 0; ; i++ { // every path through the body returns by i == 5
		n := 0
		for n < len(rest) && '0' <= rest[n] && rest[n] <= '9' {
			n++
		}
		switch {
		case n == 0:
			return OBIS{}, parseError(kind, s, ErrSyntax, fmt.Sprintf("group %c is not a number", groups[i]))
		case n > 1 && rest[0] == '0':
			return OBIS{}, parseError(kind, s, ErrSyntax, fmt.Sprintf("group %c has a leading zero", groups[i]))
		}
		v, err := strconv.Atoi(rest[:n])
		if err != nil || v > 255 {
			return OBIS{}, parseError(kind, s, ErrRange, fmt.Sprintf("group %c exceeds 255", groups[i]))
		}
		g[i] = uint8(v)
		rest = rest[n:]
		if rest == "" && i >= 4 {
			return OBIS{g[0], g[1], g[2], g[3], g[4], g[5]}, nil
		}
		if i == 5 || rest == "" || rest[0] != seps[i] {
			return OBIS{}, parseError(kind, s, ErrSyntax, "want A-B:C.D.E or A-B:C.D.E*F")
		}
		rest = rest[1:]
	}
}

// String returns the canonical form "A-B:C.D.E", followed by "*F" unless F
// is 255, the value that means "no further qualification".
func (o OBIS) String() string {
	b, _ := o.AppendText(make([]byte, 0, 23))
	return string(b)
}

// AppendText implements encoding.TextAppender with the canonical form, so
// that hot paths can compare a code without allocating a string.
func (o OBIS) AppendText(b []byte) ([]byte, error) {
	for i, v := range [...]uint8{o.A, o.B, o.C, o.D, o.E} {
		if i > 0 {
			b = append(b, "-:.."[i-1])
		}
		b = strconv.AppendUint(b, uint64(v), 10)
	}
	if o.F != 255 {
		b = append(b, '*')
		b = strconv.AppendUint(b, uint64(o.F), 10)
	}
	return b, nil
}

// Medium returns the commodity named by the A group (1 electricity, 6 heat,
// 7 gas, 8 and 9 water); ok is false for abstract and other media.
func (o OBIS) Medium() (c Commodity, ok bool) {
	switch o.A {
	case 1:
		return Electricity, true
	case 6:
		return Heat, true
	case 7:
		return Gas, true
	case 8, 9:
		return Water, true
	}
	return 0, false
}

// MarshalText implements encoding.TextMarshaler with the canonical form.
func (o OBIS) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler. Every OBIS value is a
// valid code, so unlike the identifiers there is no empty form.
func (o *OBIS) UnmarshalText(text []byte) error {
	v, err := ParseOBIS(string(text))
	if err != nil {
		return err
	}
	*o = v
	return nil
}

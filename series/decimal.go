package series

import (
	"fmt"
	"strings"
)

// A Decimal is a value with six decimal places, counted in millionths: the
// numeric(18,6) of the table, exactly. Its magnitude is below 10^12.
type Decimal int64

// MaxDecimal is the largest magnitude numeric(18,6) holds, in millionths.
const MaxDecimal Decimal = 999_999_999_999_999_999

// ParseDecimal parses a decimal number with at most six decimal places,
// such as "-12.5" or "0.000001". Exponents and more places are refused
// rather than rounded: a metered value is not ours to round.
func ParseDecimal(s string) (Decimal, error) {
	in := s
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	ip, fp, dot := strings.Cut(s, ".")
	if ip == "" && fp == "" || dot && fp == "" || len(fp) > 6 || !digits(ip) || !digits(fp) || len(ip) > 12 {
		return 0, fmt.Errorf("decimal %q: want at most 12 digits, optionally a point and at most 6 more", in)
	}
	// At most 18 digits, checked above: cannot overflow. Counted in place
	// rather than parsed from a concatenation, which allocates per value.
	var n int64
	for _, part := range [2]string{ip, fp} {
		for i := 0; i < len(part); i++ {
			n = n*10 + int64(part[i]-'0')
		}
	}
	for range 6 - len(fp) {
		n *= 10
	}
	if neg {
		n = -n
	}
	return Decimal(n), nil
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// String formats d with six decimal places, as PostgreSQL does.
func (d Decimal) String() string {
	a := uint64(d)
	sign := ""
	if d < 0 {
		a, sign = uint64(-d), "-"
	}
	return fmt.Sprintf("%s%d.%06d", sign, a/1_000_000, a%1_000_000)
}

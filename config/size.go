package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// A Size is a number of bytes, written as an integer or with a unit:
// "256MiB", "64MB", "32KiB". Units are B, KB, MB, GB, TB (powers of 1000)
// and KiB, MiB, GiB, TiB (powers of 1024), in any case. It implements
// encoding.TextMarshaler and encoding.TextUnmarshaler.
type Size int64

// sizeUnits are the units of a Size, largest first, so that String picks
// the largest one that divides a size exactly.
var sizeUnits = []struct {
	name  string
	bytes int64
}{
	{"TiB", 1 << 40}, {"TB", 1e12},
	{"GiB", 1 << 30}, {"GB", 1e9},
	{"MiB", 1 << 20}, {"MB", 1e6},
	{"KiB", 1 << 10}, {"KB", 1e3},
	{"B", 1},
}

// ParseSize parses a non-negative number of bytes such as "256MiB", "64MB"
// or "1048576".
func ParseSize(s string) (int64, error) {
	n, err := parseSize(s)
	if err != nil {
		return 0, fmt.Errorf("config: %w", err)
	}
	return n, nil
}

// parseSize is ParseSize with errors that do not name the package.
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	switch {
	case t == "":
		return 0, errors.New("empty size")
	case strings.HasPrefix(t, "-"):
		return 0, fmt.Errorf("negative size %s", t)
	case i == 0:
		return 0, fmt.Errorf("size %q: want a whole number and a unit, as in 256MiB", s)
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	unit := strings.TrimSpace(t[i:])
	if unit == "" {
		return n, nil
	}
	for _, u := range sizeUnits {
		if strings.EqualFold(unit, u.name) {
			if n > math.MaxInt64/u.bytes {
				return 0, fmt.Errorf("size %q is too large", s)
			}
			return n * u.bytes, nil
		}
	}
	return 0, fmt.Errorf("size %q: unknown unit %q (want B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)", s, unit)
}

// String formats s in the largest unit that divides it exactly: "256MiB",
// "2GB", "1001B".
func (s Size) String() string {
	if s < 0 {
		return strconv.FormatInt(int64(s), 10) + "B"
	}
	for _, u := range sizeUnits {
		if s != 0 && int64(s)%u.bytes == 0 {
			return strconv.FormatInt(int64(s)/u.bytes, 10) + u.name
		}
	}
	return "0B"
}

// MarshalText returns s as String formats it.
func (s Size) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses text as ParseSize does.
func (s *Size) UnmarshalText(text []byte) error {
	n, err := ParseSize(string(text))
	if err != nil {
		return err
	}
	*s = Size(n)
	return nil
}

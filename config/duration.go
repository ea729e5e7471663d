package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// day is the unit "d" of a Duration: 24 hours, not a calendar day.
const day = 24 * time.Hour

// A Duration is a time.Duration written as Go writes it, with whole days
// ("d", 24 hours) allowed in front: "45d", "1d12h", "15m", "3s". It
// implements encoding.TextMarshaler and encoding.TextUnmarshaler, so it also
// serves as a command-line flag through flag.TextVar.
type Duration time.Duration

// ParseDuration parses a non-negative duration such as "45d", "1d12h" or
// "500ms". A number without a unit other than "0" is refused: "45" could be
// seconds or days.
func ParseDuration(s string) (time.Duration, error) {
	d, err := parseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("config: %w", err)
	}
	return d, nil
}

// parseDuration is ParseDuration with errors that do not name the package.
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return 0, errors.New("empty duration")
	case s == "0":
		return 0, nil
	case strings.HasPrefix(s, "-"):
		return 0, fmt.Errorf("negative duration %s", s)
	case isDigits(s):
		return 0, fmt.Errorf("duration %s has no unit", s)
	}
	days, rest, hasDays := strings.Cut(s, "d")
	if !hasDays {
		days, rest = "", s
	}
	var d time.Duration
	if hasDays {
		if !isDigits(days) {
			return 0, fmt.Errorf("duration %q: days must be a whole number in front, as in 1d12h", s)
		}
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n > math.MaxInt64/int64(day) {
			return 0, fmt.Errorf("duration %q is too long", s)
		}
		d = time.Duration(n) * day
	}
	if rest == "" {
		return d, nil
	}
	if c := rest[0]; c != '.' && (c < '0' || c > '9') {
		return 0, fmt.Errorf("invalid duration %q", s)
	}
	r, err := time.ParseDuration(rest)
	switch {
	case err != nil:
		return 0, fmt.Errorf("invalid duration %q: want a number and a unit (d, h, m, s, ms, us, ns) per part, as in 1d12h", s)
	case r > math.MaxInt64-d:
		return 0, fmt.Errorf("duration %q is too long", s)
	}
	return d + r, nil
}

// String formats d with whole days in front and without zero minutes or
// seconds: "45d", "1d12h", "15m", "1h30m", "0s".
func (d Duration) String() string {
	t := time.Duration(d)
	if t < 0 {
		if t == math.MinInt64 {
			return t.String()
		}
		return "-" + Duration(-t).String()
	}
	days, rest := t/day, t%day
	var b strings.Builder
	if days > 0 {
		b.WriteString(strconv.FormatInt(int64(days), 10))
		b.WriteString("d")
		if rest == 0 {
			return b.String()
		}
	}
	s := rest.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	b.WriteString(s)
	return b.String()
}

// MarshalText returns d as String formats it.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText parses text as ParseDuration does.
func (d *Duration) UnmarshalText(text []byte) error {
	v, err := ParseDuration(string(text))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// isDigits reports whether s is a non-empty run of ASCII digits.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

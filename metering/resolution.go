package metering

import (
	"strconv"
	"time"
)

// A Resolution is the length of the intervals of a series, written as an
// ISO 8601 duration. The constants are ordered from finest to coarsest, so
// r <= Hour selects the fixed-length ones. The zero Resolution means "not set".
type Resolution uint8

// The resolutions, with their canonical ISO 8601 spelling.
const (
	FiveMinutes Resolution = iota + 1 // PT5M
	QuarterHour                       // PT15M
	HalfHour                          // PT30M
	Hour                              // PT1H
	Day                               // P1D: a local calendar day of 23, 24 or 25 hours
	Month                             // P1M
	Year                              // P1Y
)

// ParseResolution parses a canonical duration such as "PT15M". Equivalent
// spellings such as "PT60M" or "PT0.25H" are rejected, because a series keyed
// on the text would otherwise split in two.
func ParseResolution(s string) (Resolution, error) { return parseEnum("resolution", s, Year) }

// Valid reports whether r is one of the defined Resolution values; the zero
// value, "not set", is not.
func (r Resolution) Valid() bool { return r >= 1 && r <= Year }

// String returns the canonical ISO 8601 duration, such as "PT15M".
func (r Resolution) String() string {
	switch r {
	case FiveMinutes:
		return "PT5M"
	case QuarterHour:
		return "PT15M"
	case HalfHour:
		return "PT30M"
	case Hour:
		return "PT1H"
	case Day:
		return "P1D"
	case Month:
		return "P1M"
	case Year:
		return "P1Y"
	}
	return "Resolution(" + strconv.Itoa(int(r)) + ")"
}

// Fixed returns the length of r when every interval has the same length.
// Days, months and years do not: their length depends on the calendar, so
// they report false and are stepped with Calendar.Next.
func (r Resolution) Fixed() (time.Duration, bool) {
	switch r {
	case FiveMinutes:
		return 5 * time.Minute, true
	case QuarterHour:
		return 15 * time.Minute, true
	case HalfHour:
		return 30 * time.Minute, true
	case Hour:
		return time.Hour, true
	}
	return 0, false
}

// MarshalText implements encoding.TextMarshaler; the zero Resolution is empty text.
func (r Resolution) MarshalText() ([]byte, error) { return marshalEnum("resolution", r, Year) }

// UnmarshalText implements encoding.TextUnmarshaler; empty text yields the zero Resolution.
func (r *Resolution) UnmarshalText(text []byte) error {
	return unmarshalEnum("resolution", text, Year, r)
}

package metering

import (
	"fmt"
	"time"
)

// A Date is a civil date without a time zone: the name of a local day or a
// gas day. Its fields mean what they mean for time.Date. The zero Date is
// not a valid date; it prints and marshals as empty text.
type Date struct {
	Year  int
	Month time.Month
	Day   int
}

// dateOf returns the date of t's wall clock in t's own location.
func dateOf(t time.Time) Date {
	y, m, d := t.Date()
	return Date{Year: y, Month: m, Day: d}
}

// ParseDate parses a date written as YYYY-MM-DD. A well-formed date that
// does not exist, such as 2026-02-30, is reported with ErrRange.
func ParseDate(s string) (Date, error) {
	const kind = "date"
	if len(s) != 10 || s[4] != '-' || s[7] != '-' || !isDigits(s[:4]+s[5:7]+s[8:]) {
		return Date{}, parseError(kind, s, ErrSyntax, "want YYYY-MM-DD")
	}
	num := func(t string) int {
		n := 0
		for i := 0; i < len(t); i++ {
			n = n*10 + int(t[i]-'0')
		}
		return n
	}
	d := Date{Year: num(s[:4]), Month: time.Month(num(s[5:7])), Day: num(s[8:])}
	if !d.IsValid() {
		return Date{}, parseError(kind, s, ErrRange, "no such day")
	}
	return d, nil
}

// String returns the date as YYYY-MM-DD, or "" for the zero Date.
func (d Date) String() string {
	if d == (Date{}) {
		return ""
	}
	return fmt.Sprintf("%04d-%02d-%02d", d.Year, int(d.Month), d.Day)
}

// IsValid reports whether d names a day that exists, so that no field is
// silently carried over into the next month or year.
func (d Date) IsValid() bool {
	return d.Month >= time.January && d.Month <= time.December && d.Day >= 1 && d.AddDays(0) == d
}

// AddDays returns the date n days after d (before it for negative n),
// normalizing d first as time.Date does.
func (d Date) AddDays(n int) Date {
	// Noon in UTC keeps the arithmetic clear of any offset or DST change.
	return dateOf(time.Date(d.Year, d.Month, d.Day+n, 12, 0, 0, 0, time.UTC))
}

// Compare returns -1, 0 or +1 as d is before, equal to or after e.
func (d Date) Compare(e Date) int {
	switch {
	case d.Year != e.Year:
		return cmpInt(d.Year, e.Year)
	case d.Month != e.Month:
		return cmpInt(int(d.Month), int(e.Month))
	}
	return cmpInt(d.Day, e.Day)
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Weekday returns the day of the week of d.
func (d Date) Weekday() time.Weekday {
	return time.Date(d.Year, d.Month, d.Day, 12, 0, 0, 0, time.UTC).Weekday()
}

// MarshalText implements encoding.TextMarshaler; the zero Date is empty text.
func (d Date) MarshalText() ([]byte, error) {
	if d != (Date{}) && !d.IsValid() {
		return nil, fmt.Errorf("metering: cannot marshal invalid date %d-%d-%d", d.Year, int(d.Month), d.Day)
	}
	return []byte(d.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler; empty text yields the
// zero Date.
func (d *Date) UnmarshalText(text []byte) error {
	if len(text) == 0 {
		*d = Date{}
		return nil
	}
	v, err := ParseDate(string(text))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

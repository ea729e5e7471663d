package privacy

import (
	"errors"
	"fmt"
	"time"

	"github.com/meterstore/meterstore/metering"
)

// MaxCalendarYears is the longest CalendarYears retention Validate accepts.
const MaxCalendarYears = 1000

// A Retention says when the link between a subject and the values
// collected from it comes due for destruction. The zero Retention is off:
// nothing ever comes due, and Sweep refuses it, because destroying links is
// irreversible and turning that on is a compliance decision.
type Retention struct {
	kind   retentionKind
	years  int
	period time.Duration
}

type retentionKind uint8

const (
	retentionOff retentionKind = iota
	retentionCalendarYears
	retentionRolling
)

// CalendarYears returns the retention of § 60 Abs. 6 MsbG: n years counted
// from the end of the calendar year of collection. A (subject, collection
// year Y) comes due on 31 December of Y+n, Berlin time: it is due at now
// exactly when the Berlin calendar day of now is 31 December of Y+n or
// later, so from 00:00 Europe/Berlin that day (23:00 UTC on 30 December).
// A value collected on 2 January 2025 with CalendarYears(3) is not due at
// 23:59 on 30 December 2028 and is due at 00:00 on 31 December 2028, Berlin
// time. Y is the Berlin year too, so a value collected at 23:30 UTC on
// 31 December 2024 belongs to 2025. This is not now minus n years, which
// would destroy the link of a value collected in January almost a year
// before the statute requires.
func CalendarYears(n int) Retention {
	return Retention{kind: retentionCalendarYears, years: n}
}

// Rolling returns the retention that comes due a fixed duration d after
// collection: a (subject, collection year) is due at now when its earliest
// registered collection instant is at or before now minus d. It suits a
// purpose that ends before the statutory deadline.
func Rolling(d time.Duration) Retention {
	return Retention{kind: retentionRolling, period: d}
}

// IsZero reports whether r is the zero Retention, which is off.
func (r Retention) IsZero() bool { return r.kind == retentionOff }

// Validate reports whether Sweep would accept r: CalendarYears needs n from
// 1 to MaxCalendarYears, Rolling a positive duration, and the zero
// Retention is refused.
func (r Retention) Validate() error {
	switch r.kind {
	case retentionOff:
		return errors.New("retention is off (the zero Retention)")
	case retentionCalendarYears:
		if r.years < 1 || r.years > MaxCalendarYears {
			return fmt.Errorf("%v: want 1 to %d calendar years", r, MaxCalendarYears)
		}
	case retentionRolling:
		if r.period <= 0 {
			return fmt.Errorf("%v: want a positive duration", r)
		}
	}
	return nil
}

// String returns r in its Go spelling, such as "CalendarYears(3)" or
// "Rolling(720h0m0s)", or "off". Sweep records it in the audit table.
func (r Retention) String() string {
	switch r.kind {
	case retentionCalendarYears:
		return fmt.Sprintf("CalendarYears(%d)", r.years)
	case retentionRolling:
		return fmt.Sprintf("Rolling(%v)", r.period)
	}
	return "off"
}

// lastDueYear returns the latest collection year that CalendarYears(n)
// has brought due on Berlin day today: year Y is due once today is on or
// after 31 December of Y+n.
func lastDueYear(today metering.Date, n int) int {
	if today.Month == time.December && today.Day == 31 {
		return today.Year - n
	}
	return today.Year - n - 1
}

// dueBefore returns the latest collection instant that Rolling(d) has
// brought due at now, truncated to the microsecond as the registry stores
// instants.
func dueBefore(now time.Time, d time.Duration) time.Time {
	return now.Add(-d).Truncate(time.Microsecond)
}

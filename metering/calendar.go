package metering

import (
	"fmt"
	"time"
	_ "time/tzdata" // a Calendar must not depend on the host's zoneinfo files
)

// gasDayHour is the local hour at which a gas day begins.
const gasDayHour = 6

// A Calendar places instants on the Berlin calendar that German market
// communication settles on. It is immutable and safe for concurrent use.
// The zero Calendar is not usable; build one with NewCalendar.
type Calendar struct{ loc *time.Location }

// NewCalendar returns the Europe/Berlin calendar. The zone is loaded here
// rather than at package initialization, so importing the package cannot
// fail and a caller decides what a missing zone means.
func NewCalendar() (*Calendar, error) {
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		return nil, fmt.Errorf("metering: loading calendar time zone: %w", err)
	}
	return &Calendar{loc: loc}, nil
}

// Location returns the Europe/Berlin location the calendar uses.
func (c *Calendar) Location() *time.Location { return c.loc }

// LocalDay returns the Berlin calendar day containing t.
func (c *Calendar) LocalDay(t time.Time) Date { return dateOf(t.In(c.loc)) }

// DayStart returns the instant local day d begins, Berlin midnight, in UTC.
// A d with out-of-range fields is normalized as by time.Date.
func (c *Calendar) DayStart(d Date) time.Time { return c.at(d, 0) }

// DayEnd returns the instant local day d ends, which is the start of the
// next day: 23, 24 or 25 hours after DayStart(d).
func (c *Calendar) DayEnd(d Date) time.Time { return c.at(d.AddDays(1), 0) }

// GasDay returns the gas day (Gastag) containing t. A gas day runs from 06:00
// to 06:00 local time and is named after the day on which it begins, so the
// hours before 06:00 belong to the previous day's gas day.
func (c *Calendar) GasDay(t time.Time) Date {
	lt := t.In(c.loc)
	d := dateOf(lt)
	// Clocks change at 02:00 or 03:00, never at 06:00, so the local hour
	// decides unambiguously.
	if lt.Hour() < gasDayHour {
		d = d.AddDays(-1)
	}
	return d
}

// GasDayStart returns the instant gas day d begins, 06:00 Berlin time on d, in UTC.
func (c *Calendar) GasDayStart(d Date) time.Time { return c.at(d, gasDayHour) }

// GasDayEnd returns the instant gas day d ends, which is the start of the
// next gas day. The gas day named after the Saturday before a clock change
// contains it, and so lasts 23 or 25 hours.
func (c *Calendar) GasDayEnd(d Date) time.Time { return c.at(d.AddDays(1), gasDayHour) }

// BalancingDay returns the day on which a value at t is balanced: the gas
// day for Gas, the local day for every other commodity.
func (c *Calendar) BalancingDay(t time.Time, com Commodity) Date {
	if com == Gas {
		return c.GasDay(t)
	}
	return c.LocalDay(t)
}

// BalancingDayStart returns the instant balancing day d of commodity com begins.
func (c *Calendar) BalancingDayStart(d Date, com Commodity) time.Time {
	return c.at(d, dayStartHour(com))
}

// BalancingDayEnd returns the instant balancing day d of commodity com ends,
// which is the start of the next one.
func (c *Calendar) BalancingDayEnd(d Date, com Commodity) time.Time {
	return c.at(d.AddDays(1), dayStartHour(com))
}

// MonthStart returns the instant the balancing month begins: midnight on the
// first, or 06:00 on the first for Gas, since a gas month is the gas days
// named after its calendar days. Months beyond December roll into the next
// year, so MonthStart(y, m+1, com) is where month m ends.
func (c *Calendar) MonthStart(year int, month time.Month, com Commodity) time.Time {
	return c.at(Date{Year: year, Month: month, Day: 1}, dayStartHour(com))
}

// IntervalsPerDay returns the number of intervals of resolution r in
// balancing day d of commodity com: 92, 96 or 100 quarter hours, for
// instance, on the day summer time begins, an ordinary day and the day it
// ends. It fails for resolutions coarser than a day.
func (c *Calendar) IntervalsPerDay(d Date, r Resolution, com Commodity) (int, error) {
	if step, ok := r.Fixed(); ok {
		// Days last whole hours and every fixed step divides an hour.
		return int(c.BalancingDayEnd(d, com).Sub(c.BalancingDayStart(d, com)) / step), nil
	}
	if r == Day {
		return 1, nil
	}
	return 0, fmt.Errorf("metering: a day holds no whole number of %v intervals", r)
}

// Next returns the start of the interval of resolution r that follows the
// one beginning at t, in UTC. Fixed resolutions add their length, so a
// quarter hour stays 15 minutes across a clock change; Day, Month and Year
// advance the Berlin wall clock, so a day lasts 23 to 25 hours. t should lie
// on the grid of r (midnight, or 06:00 for gas, on the first for months);
// elsewhere the result is normalized as by time.AddDate.
// Next panics if r is not a valid Resolution, since stepping by nothing
// would never end.
func (c *Calendar) Next(t time.Time, r Resolution) time.Time {
	if step, ok := r.Fixed(); ok {
		return t.Add(step).UTC()
	}
	lt := t.In(c.loc)
	switch r {
	case Day:
		lt = lt.AddDate(0, 0, 1)
	case Month:
		lt = lt.AddDate(0, 1, 0)
	case Year:
		lt = lt.AddDate(1, 0, 0)
	default:
		panic("metering: Calendar.Next with invalid " + r.String())
	}
	return lt.UTC()
}

// at returns hour o'clock Berlin time on day d, in UTC.
func (c *Calendar) at(d Date, hour int) time.Time {
	return time.Date(d.Year, d.Month, d.Day, hour, 0, 0, 0, c.loc).UTC()
}

// dayStartHour is the local hour at which a balancing day of com begins.
func dayStartHour(com Commodity) int {
	if com == Gas {
		return gasDayHour
	}
	return 0
}

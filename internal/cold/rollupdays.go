package cold

import (
	"time"

	"github.com/meterstore/meterstore/metering"
)

// daySpans tells where the balancing days of rollup rows begin and end:
// the calendar's arithmetic once a day rather than once a row, as the
// rows of a window share a few days among thousands of series.
type daySpans struct {
	cal *metering.Calendar
	m   map[daySpanKey][2]time.Time
}

type daySpanKey struct {
	day metering.Date
	com metering.Commodity
}

func newDaySpans(cal *metering.Calendar) *daySpans {
	return &daySpans{cal: cal, m: map[daySpanKey][2]time.Time{}}
}

// of returns where day of commodity com begins and ends.
func (d *daySpans) of(day metering.Date, com metering.Commodity) (start, end time.Time) {
	k := daySpanKey{day, com}
	s, ok := d.m[k]
	if !ok {
		s = [2]time.Time{d.cal.BalancingDayStart(day, com), d.cal.BalancingDayEnd(day, com)}
		d.m[k] = s
	}
	return s[0], s[1]
}

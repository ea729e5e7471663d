package privacy

import (
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
)

func TestLastDueYear(t *testing.T) {
	for _, c := range []struct {
		today metering.Date
		n     int
		want  int
	}{
		{metering.Date{Year: 2028, Month: time.December, Day: 30}, 3, 2024},
		{metering.Date{Year: 2028, Month: time.December, Day: 31}, 3, 2025},
		{metering.Date{Year: 2029, Month: time.January, Day: 1}, 3, 2025},
		{metering.Date{Year: 2029, Month: time.June, Day: 15}, 3, 2025},
		{metering.Date{Year: 2029, Month: time.December, Day: 31}, 1, 2028},
	} {
		if got := lastDueYear(c.today, c.n); got != c.want {
			t.Errorf("lastDueYear(%v, %d) = %d, want %d", c.today, c.n, got, c.want)
		}
	}
}

func TestRetention(t *testing.T) {
	for _, c := range []struct {
		r     Retention
		text  string
		valid bool
	}{
		{Retention{}, "off", false},
		{CalendarYears(3), "CalendarYears(3)", true},
		{CalendarYears(0), "CalendarYears(0)", false},
		{CalendarYears(-1), "CalendarYears(-1)", false},
		{CalendarYears(MaxCalendarYears + 1), "CalendarYears(1001)", false},
		{Rolling(720 * time.Hour), "Rolling(720h0m0s)", true},
		{Rolling(0), "Rolling(0s)", false},
		{Rolling(-time.Hour), "Rolling(-1h0m0s)", false},
	} {
		if got := c.r.String(); got != c.text {
			t.Errorf("String() = %q, want %q", got, c.text)
		}
		if err := c.r.Validate(); (err == nil) != c.valid {
			t.Errorf("%v: Validate() = %v", c.r, err)
		}
	}
	if !(Retention{}).IsZero() || CalendarYears(0).IsZero() || Rolling(0).IsZero() {
		t.Error("IsZero is not true exactly for the zero Retention")
	}
}

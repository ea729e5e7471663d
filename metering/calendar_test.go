package metering

import (
	"testing"
	"time"
)

func newCalendar(t testing.TB) *Calendar {
	t.Helper()
	c, err := NewCalendar()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// clockChange returns the length of local day d as the EU summer-time rule
// makes it, computed without the time zone database: the last Sunday of
// March loses an hour, the last Sunday of October gains one.
func clockChange(d Date) time.Duration {
	lastSunday := d.Weekday() == time.Sunday && d.Day+7 > 31 // March and October have 31 days
	switch {
	case lastSunday && d.Month == time.March:
		return 23 * time.Hour
	case lastSunday && d.Month == time.October:
		return 25 * time.Hour
	}
	return 24 * time.Hour
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func date(s string) Date {
	d, err := ParseDate(s)
	if err != nil {
		panic(err)
	}
	return d
}

var fixedResolutions = []Resolution{FiveMinutes, QuarterHour, HalfHour, Hour}

// checkDay verifies one balancing day of com against its expected length.
func checkDay(t *testing.T, c *Calendar, d Date, com Commodity, want time.Duration) {
	t.Helper()
	start, end := c.BalancingDayStart(d, com), c.BalancingDayEnd(d, com)
	if start.Location() != time.UTC || end.Location() != time.UTC {
		t.Fatalf("%v %v: bounds not in UTC: %v, %v", com, d, start, end)
	}
	if !start.Before(end) || !end.Equal(c.BalancingDayStart(d.AddDays(1), com)) {
		t.Fatalf("%v %v: bounds %v, %v do not chain to the next day", com, d, start, end)
	}
	if got := end.Sub(start); got != want {
		t.Fatalf("%v %v: length %v, want %v", com, d, got, want)
	}
	for _, probe := range []time.Time{start, end.Add(-time.Microsecond), start.Add(want / 2)} {
		if got := c.BalancingDay(probe, com); got != d {
			t.Fatalf("%v: BalancingDay(%v) = %v, want %v", com, probe, got, d)
		}
	}
	if got := c.BalancingDay(end, com); got != d.AddDays(1) {
		t.Fatalf("%v: BalancingDay(%v) = %v, want %v", com, end, got, d.AddDays(1))
	}
	if got := c.Next(start, Day); !got.Equal(end) {
		t.Fatalf("%v %v: Next(start, P1D) = %v, want %v", com, d, got, end)
	}
	hours := int(want / time.Hour)
	for _, r := range fixedResolutions {
		step, _ := r.Fixed()
		n, err := c.IntervalsPerDay(d, r, com)
		if err != nil || n != hours*int(time.Hour/step) {
			t.Fatalf("%v %v: IntervalsPerDay(%v) = %d, %v; want %d", com, d, r, n, err, hours*int(time.Hour/step))
		}
	}
	if n, err := c.IntervalsPerDay(d, Day, com); n != 1 || err != nil {
		t.Fatalf("%v %v: IntervalsPerDay(P1D) = %d, %v; want 1", com, d, n, err)
	}
	// Stepping quarter hours from the start must land exactly on the end.
	n, _ := c.IntervalsPerDay(d, QuarterHour, com)
	at := start
	for range n {
		at = c.Next(at, QuarterHour)
	}
	if !at.Equal(end) {
		t.Fatalf("%v %v: %d quarter hours from %v reach %v, want %v", com, d, n, start, at, end)
	}
}

// TestEveryDay checks every local day and gas day from 2015 through 2040.
func TestEveryDay(t *testing.T) {
	c := newCalendar(t)
	var short, long int
	for d := date("2015-01-01"); d.Compare(date("2040-12-31")) <= 0; d = d.AddDays(1) {
		want := clockChange(d)
		switch want {
		case 23 * time.Hour:
			short++
		case 25 * time.Hour:
			long++
		}
		if start := c.DayStart(d); !start.Equal(c.BalancingDayStart(d, Electricity)) {
			t.Fatalf("%v: DayStart %v differs from the electricity balancing day", d, start)
		}
		if h, m, s := c.DayStart(d).In(c.Location()).Clock(); h != 0 || m != 0 || s != 0 {
			t.Fatalf("%v: day starts at %02d:%02d:%02d local time", d, h, m, s)
		}
		if got := c.LocalDay(c.DayEnd(d).Add(-time.Microsecond)); got != d {
			t.Fatalf("LocalDay(DayEnd(%v) - 1µs) = %v", d, got)
		}
		checkDay(t, c, d, Electricity, want)
		checkDay(t, c, d, Water, want)

		// A gas day contains the clock change of the following Sunday, and
		// starts 6 local hours after midnight: 5 or 7 real ones on a change.
		gs, ge := c.GasDayStart(d), c.GasDayEnd(d)
		if got := gs.Sub(c.DayStart(d)); got != want-18*time.Hour {
			t.Fatalf("gas day %v starts %v after local midnight, want %v", d, got, want-18*time.Hour)
		}
		if !gs.Equal(c.BalancingDayStart(d, Gas)) || !ge.Equal(c.BalancingDayEnd(d, Gas)) {
			t.Fatalf("gas day %v: GasDayStart/End differ from the gas balancing day", d)
		}
		if c.GasDay(gs) != d || c.GasDay(ge.Add(-time.Microsecond)) != d {
			t.Fatalf("gas day %v: GasDay of its bounds is %v and %v", d, c.GasDay(gs), c.GasDay(ge.Add(-time.Microsecond)))
		}
		checkDay(t, c, d, Gas, clockChange(d.AddDays(1)))
	}
	// 26 years, one change each way per year: proves the loop saw them.
	if short != 26 || long != 26 {
		t.Fatalf("saw %d short and %d long days, want 26 each", short, long)
	}
}

// TestEveryMonth checks that months are the sum of their days and chain.
func TestEveryMonth(t *testing.T) {
	c := newCalendar(t)
	for _, com := range []Commodity{Electricity, Gas} {
		for y := 2015; y <= 2040; y++ {
			var year time.Duration
			for m := time.January; m <= time.December; m++ {
				start, end := c.MonthStart(y, m, com), c.MonthStart(y, m+1, com)
				if !start.Equal(c.BalancingDayStart(Date{y, m, 1}, com)) {
					t.Fatalf("%v %d-%02d: MonthStart %v is not the first balancing day", com, y, m, start)
				}
				if got := c.Next(start, Month); !got.Equal(end) {
					t.Fatalf("%v %d-%02d: Next(P1M) = %v, want %v", com, y, m, got, end)
				}
				var sum time.Duration
				days := 0
				for d := (Date{y, m, 1}); d.Month == m; d = d.AddDays(1) {
					sum += c.BalancingDayEnd(d, com).Sub(c.BalancingDayStart(d, com))
					days++
				}
				want := time.Duration(days) * 24 * time.Hour
				switch m {
				case time.March:
					want -= time.Hour
				case time.October:
					want += time.Hour
				}
				if got := end.Sub(start); got != sum || got != want {
					t.Fatalf("%v %d-%02d: month lasts %v, its days sum to %v, want %v", com, y, m, got, sum, want)
				}
				year += sum
			}
			start, end := c.MonthStart(y, time.January, com), c.MonthStart(y+1, time.January, com)
			if got := c.Next(start, Year); !got.Equal(end) || end.Sub(start) != year {
				t.Fatalf("%v %d: Next(P1Y) = %v, want %v; year %v, months %v", com, y, got, end, end.Sub(start), year)
			}
			if h := int(year / time.Hour); h != 8760 && h != 8784 {
				t.Fatalf("%v %d: %d hours", com, y, h)
			}
		}
	}
}

func TestBounds(t *testing.T) {
	c := newCalendar(t)
	tests := []struct {
		name string
		got  time.Time
		want string
	}{
		{"day start winter", c.DayStart(date("2026-01-15")), "2026-01-14T23:00:00Z"},
		{"day start summer", c.DayStart(date("2026-07-15")), "2026-07-14T22:00:00Z"},
		{"spring day start", c.DayStart(date("2026-03-29")), "2026-03-28T23:00:00Z"},
		{"spring day end", c.DayEnd(date("2026-03-29")), "2026-03-29T22:00:00Z"},
		{"autumn day start", c.DayStart(date("2026-10-25")), "2026-10-24T22:00:00Z"},
		{"autumn day end", c.DayEnd(date("2026-10-25")), "2026-10-25T23:00:00Z"},
		{"gas day winter", c.GasDayStart(date("2026-01-15")), "2026-01-15T05:00:00Z"},
		{"gas day summer", c.GasDayStart(date("2026-07-15")), "2026-07-15T04:00:00Z"},
		{"short gas day start", c.GasDayStart(date("2026-03-28")), "2026-03-28T05:00:00Z"},
		{"short gas day end", c.GasDayEnd(date("2026-03-28")), "2026-03-29T04:00:00Z"},
		{"long gas day start", c.GasDayStart(date("2026-10-24")), "2026-10-24T04:00:00Z"},
		{"long gas day end", c.GasDayEnd(date("2026-10-24")), "2026-10-25T05:00:00Z"},
		{"month", c.MonthStart(2026, time.January, Electricity), "2025-12-31T23:00:00Z"},
		{"gas month", c.MonthStart(2026, time.January, Gas), "2026-01-01T05:00:00Z"},
		{"month 13", c.MonthStart(2026, 13, Electricity), "2026-12-31T23:00:00Z"},
		{"gas month summer", c.MonthStart(2026, time.April, Gas), "2026-04-01T04:00:00Z"},
		{"normalized date", c.DayStart(Date{2026, time.February, 29}), "2026-02-28T23:00:00Z"},
		{"quarter hour over the gap", c.Next(utc("2026-03-29T00:45:00Z"), QuarterHour), "2026-03-29T01:00:00Z"},
		{"day over the gap", c.Next(utc("2026-03-28T23:00:00Z"), Day), "2026-03-29T22:00:00Z"},
		{"gas month step", c.Next(utc("2026-03-01T05:00:00Z"), Month), "2026-04-01T04:00:00Z"},
		{"step from a zoned instant", c.Next(time.Date(2026, 1, 1, 9, 0, 0, 0, time.FixedZone("UTC+9", 9*3600)), HalfHour), "2026-01-01T00:30:00Z"},
		{"day from a zoned instant", c.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, c.Location()), Day), "2026-01-01T23:00:00Z"},
	}
	for _, tt := range tests {
		if want := utc(tt.want); !tt.got.Equal(want) || tt.got.Location() != time.UTC {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, want)
		}
	}
}

func TestDayOfInstant(t *testing.T) {
	c := newCalendar(t)
	tokyo := time.FixedZone("UTC+9", 9*3600)
	newYork := time.FixedZone("UTC-4", -4*3600)
	tests := []struct {
		at         time.Time
		local, gas string
	}{
		{utc("2026-03-28T22:59:59Z"), "2026-03-28", "2026-03-28"},
		{utc("2026-03-28T23:00:00Z"), "2026-03-29", "2026-03-28"},
		{utc("2026-01-15T04:59:59Z"), "2026-01-15", "2026-01-14"},
		{utc("2026-01-15T05:00:00Z"), "2026-01-15", "2026-01-15"},
		{utc("2026-07-15T03:59:59Z"), "2026-07-15", "2026-07-14"},
		{utc("2026-07-15T04:00:00Z"), "2026-07-15", "2026-07-15"},
		{utc("2026-10-25T00:30:00Z"), "2026-10-25", "2026-10-24"}, // 02:30 summer time
		{utc("2026-10-25T01:30:00Z"), "2026-10-25", "2026-10-24"}, // 02:30 winter time
		{utc("2026-10-25T04:59:59Z"), "2026-10-25", "2026-10-24"},
		{utc("2026-10-25T05:00:00Z"), "2026-10-25", "2026-10-25"},
		{utc("2026-12-31T23:00:00Z"), "2027-01-01", "2026-12-31"},
		{time.Date(2026, 1, 15, 0, 0, 0, 0, tokyo), "2026-01-14", "2026-01-14"},
		{time.Date(2026, 7, 14, 18, 30, 0, 0, newYork), "2026-07-15", "2026-07-14"},
		{time.Date(2026, 7, 15, 0, 30, 0, 0, newYork), "2026-07-15", "2026-07-15"},
	}
	for _, tt := range tests {
		if got := c.LocalDay(tt.at); got != date(tt.local) {
			t.Errorf("LocalDay(%v) = %v, want %v", tt.at, got, tt.local)
		}
		if got := c.GasDay(tt.at); got != date(tt.gas) {
			t.Errorf("GasDay(%v) = %v, want %v", tt.at, got, tt.gas)
		}
		if got := c.BalancingDay(tt.at, Gas); got != date(tt.gas) {
			t.Errorf("BalancingDay(%v, GAS) = %v, want %v", tt.at, got, tt.gas)
		}
		if got := c.BalancingDay(tt.at, Heat); got != date(tt.local) {
			t.Errorf("BalancingDay(%v, WAERME) = %v, want %v", tt.at, got, tt.local)
		}
	}
}

func TestIntervalsPerDay(t *testing.T) {
	c := newCalendar(t)
	tests := []struct {
		day  string
		r    Resolution
		com  Commodity
		want int
	}{
		{"2026-03-29", QuarterHour, Electricity, 92},
		{"2026-10-25", QuarterHour, Electricity, 100},
		{"2026-06-01", QuarterHour, Electricity, 96},
		{"2026-03-29", Hour, Electricity, 23},
		{"2026-10-25", Hour, Electricity, 25},
		{"2026-06-01", FiveMinutes, Electricity, 288},
		{"2026-10-25", HalfHour, Electricity, 50},
		{"2026-03-29", Day, Electricity, 1},
		{"2026-03-28", QuarterHour, Gas, 92},
		{"2026-03-29", QuarterHour, Gas, 96},
		{"2026-10-24", Hour, Gas, 25},
		{"2026-10-25", Hour, Gas, 24},
	}
	for _, tt := range tests {
		got, err := c.IntervalsPerDay(date(tt.day), tt.r, tt.com)
		if err != nil || got != tt.want {
			t.Errorf("IntervalsPerDay(%s, %v, %v) = %d, %v; want %d", tt.day, tt.r, tt.com, got, err, tt.want)
		}
	}
	for _, r := range []Resolution{Month, Year, 0, 42} {
		if n, err := c.IntervalsPerDay(date("2026-06-01"), r, Electricity); err == nil {
			t.Errorf("IntervalsPerDay(%v) = %d, want an error", r, n)
		}
	}
}

func TestNextPanicsOnInvalidResolution(t *testing.T) {
	c := newCalendar(t)
	defer func() {
		if recover() == nil {
			t.Error("Next with Resolution(0) did not panic")
		}
	}()
	c.Next(utc("2026-01-01T00:00:00Z"), 0)
}

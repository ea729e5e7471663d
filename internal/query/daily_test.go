package query

import (
	"slices"
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// TestDailyElectricity: the day summer time begins, split between the
// tiers, with substitutes, a correction on either side of W and a
// missing quarter hour; the days are bounded by balancing_day, and the
// bound reads only their readings.
func TestDailyElectricity(t *testing.T) {
	s := newSource(t, loadProfile())
	d28, d29 := date(t, "2026-03-28"), date(t, "2026-03-29")
	rows := append(quarters(1, d28), quarters(1, d29, 5)...)
	for i := range rows {
		if i%10 == 0 {
			rows[i].Quality = metering.Substitute
		}
	}
	s.addHot(rows...)
	w := time.Date(2026, 3, 29, 10, 0, 0, 0, time.UTC)
	s.archive(w)
	// Version 2 of two quarter hours below W and one above: 7,000
	// millionths where 1,000 were.
	var below, above []series.Reading
	for _, r := range rows {
		r.Version, r.Value, r.Quality = 2, 7_000, metering.TrueValue
		r.RecordedAt = rec.Add(time.Hour)
		switch {
		case r.From.Equal(w.Add(-15*time.Minute)) || r.From.Equal(w.Add(-30*time.Minute)):
			below = append(below, r)
		case r.From.Equal(w):
			above = append(above, r)
		}
	}
	s.addCold(below)
	s.addHot(above...)
	e := newEngine(t, s)
	s.Calls()
	res := query(t, e, `SELECT malo_id, balancing_day, sparte, resolution, unit, expected, present, value_sum,
		quality_220, quality_67, max_version, epoch_us(max_recorded_at), epoch_us("from"), epoch_us("to")
		FROM daily WHERE balancing_day >= '2026-03-28' AND balancing_day <= DATE '2026-03-29' ORDER BY ALL`)
	// The 28th: 96 quarter hours, 10 substitutes. The 29th: 91 of 92,
	// the index 5 missing; substitutes at indexes 0, 10, ... of rows,
	// which continue the 28th's; three corrected to 0.007 and to 220.
	subs29 := 0
	for i := 96; i < len(rows); i++ {
		if i%10 == 0 {
			subs29++
		}
	}
	sub := func(rs []series.Reading, w time.Time) int {
		n := 0
		for _, r := range rs {
			if r.Quality == metering.Substitute && (r.From.Equal(w) || r.From.Equal(w.Add(-15*time.Minute)) || r.From.Equal(w.Add(-30*time.Minute))) {
				n++
			}
		}
		return n
	}(rows[96:], w)
	want := []string{
		malo(1) + " 2026-03-28T00:00:00 STROM PT15M kWh 96 96 0.096000 86 10 1 " + text(rec.UnixMicro()) + " " +
			text(cal.DayStart(d28).UnixMicro()) + " " + text(cal.DayEnd(d28).UnixMicro()),
		malo(1) + " 2026-03-29T00:00:00 STROM PT15M kWh 92 91 0.109000 " + itoa(91-subs29+sub) + " " + itoa(subs29-sub) + " 2 " +
			text(rec.Add(time.Hour).UnixMicro()) + " " + text(cal.DayStart(d29).UnixMicro()) + " " + text(cal.DayEnd(d29).UnixMicro()),
	}
	if got := rowsText(res); !slices.Equal(got, want) {
		t.Fatalf("daily\n got %v\nwant %v", got, want)
	}
	// The range: from midnight of the 28th to where the gas day of the
	// 29th ends.
	lo, hi := "2026-03-27T23:00:00", "2026-03-30T04:00:00"
	if got, want := s.Calls(), []string{"watermark", "hot[2026-03-29T10:00:00," + hi + ")", "cold[" + lo + "," + hi + ")", "floor"}; !slices.Equal(got, want) {
		t.Errorf("reads %v, want %v", got, want)
	}
	// Named by its table, and beside readings: the same sums.
	n := count(t, e, `SELECT count(*) FROM power.daily AS d JOIN (SELECT balancing_day, sum(value) AS v FROM readings GROUP BY ALL) AS r
		ON d.balancing_day = r.balancing_day AND d.value_sum = r.v`)
	if n != 2 {
		t.Errorf("daily and readings agree on %d days, want 2", n)
	}
}

// TestDailyGas: gas days begin at 06:00 local time; the one holding the
// night summer time begins, from the 28th to the 29th, lasts 23 hours.
func TestDailyGas(t *testing.T) {
	s := newSource(t, gasHourly())
	d28, d29 := date(t, "2026-03-28"), date(t, "2026-03-29")
	s.addHot(append(gasHours(1, d28), gasHours(1, d29, 0)...)...)
	e := newEngine(t, s)
	res := query(t, e, `SELECT balancing_day, expected, present, value_sum, epoch_us("from") FROM daily ORDER BY ALL`)
	want := []string{
		"2026-03-28T00:00:00 23 23 0.046000 " + text(cal.GasDayStart(d28).UnixMicro()),
		"2026-03-29T00:00:00 24 23 0.046000 " + text(cal.GasDayStart(d29).UnixMicro()),
	}
	if got := rowsText(res); !slices.Equal(got, want) {
		t.Fatalf("daily\n got %v\nwant %v", got, want)
	}
}

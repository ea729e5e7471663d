package query

import (
	"slices"
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

func date(t *testing.T, s string) metering.Date {
	t.Helper()
	d, err := metering.ParseDate(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// intervals returns location i's readings of balancing day d, made by
// at, every step from the day's start to its end, leaving out the
// intervals whose index is in skip.
func intervals(d metering.Date, com metering.Commodity, step time.Duration, at func(from time.Time) series.Reading, skip ...int) []series.Reading {
	var out []series.Reading
	end := cal.BalancingDayEnd(d, com)
	for k, from := 0, cal.BalancingDayStart(d, com); from.Before(end); k, from = k+1, from.Add(step) {
		if !slices.Contains(skip, k) {
			out = append(out, at(from))
		}
	}
	return out
}

// quarters returns location i's quarter hours of Berlin day d.
func quarters(i int, d metering.Date, skip ...int) []series.Reading {
	return intervals(d, metering.Electricity, 15*time.Minute, func(from time.Time) series.Reading { return reading(i, from, 1_000) }, skip...)
}

// gasHours returns location i's hours of gas day d.
func gasHours(i int, d metering.Date, skip ...int) []series.Reading {
	return intervals(d, metering.Gas, time.Hour, func(from time.Time) series.Reading { return gasHour(i, from) }, skip...)
}

func gasHour(i int, from time.Time) series.Reading {
	r := reading(i, from, 2_000)
	r.OBIS, r.To, r.Resolution, r.Extra = "7-20:99.33.17", from.Add(time.Hour), metering.Hour, nil
	r.BalancingDay = cal.GasDay(from)
	return r
}

// gasHourly declares hourly gas values, balanced by the gas day.
func gasHourly() *series.Table {
	return &series.Table{
		Name: "gas", TimeModel: series.Interval, Commodity: metering.Gas,
		Resolutions: []metering.Resolution{metering.Hour},
		Width:       series.Monthly, Headroom: 31 * 24 * time.Hour,
	}
}

// TestCompletenessElectricity: quarter hours around the spring clock
// change, split between the tiers, with a missing interval, an off-grid
// one, a correction in both tiers, meters silent in the range that were
// seen before it (within the lookback or not) and a meter that appears
// in the range; then the autumn clock change.
func TestCompletenessElectricity(t *testing.T) {
	s := newSource(t, loadProfile())
	d28, d29, d30 := date(t, "2026-03-28"), date(t, "2026-03-29"), date(t, "2026-03-30")
	var rows []series.Reading
	for _, d := range []metering.Date{d28, d29, d30} {
		rows = append(rows, quarters(1, d)...)
	}
	rows = append(rows, quarters(2, d29, 10)...)
	// Off the grid: 10:05 local time.
	rows = append(rows, quarters(3, d28)...)
	offGrid := reading(3, cal.DayStart(d28).Add(10*time.Hour+5*time.Minute), 5)
	rows = append(rows, offGrid)
	v1 := quarters(4, d29)
	rows = append(rows, v1...)
	// Seen 8 days before the range, on the lookback's first day and the
	// day before it.
	rows = append(rows, reading(5, cal.DayStart(d28.AddDays(-8)).Add(time.Hour), 1),
		reading(7, cal.DayStart(d28.AddDays(-CompletenessLookback)), 1),
		reading(6, cal.DayEnd(d28.AddDays(-CompletenessLookback-1)).Add(-15*time.Minute), 1))
	rows = append(rows, quarters(8, d30, 0, 1, 2)...)
	s.addHot(rows...)
	// Archive up to 10:00 UTC on the day of the clock change, then
	// correct five quarter hours of meter 4 on either side of W.
	w := time.Date(2026, 3, 29, 10, 0, 0, 0, time.UTC)
	s.archive(w)
	var below, above []series.Reading
	for _, r := range v1 {
		r.Version, r.Value = 2, 7_000
		if r.From.Before(w) && r.From.After(w.Add(-2*time.Hour)) {
			below = append(below, r)
		} else if !r.From.Before(w) && r.From.Before(w.Add(75*time.Minute)) {
			above = append(above, r)
		}
	}
	if len(below) != 7 || len(above) != 5 {
		t.Fatalf("corrections: %d below W, %d above", len(below), len(above))
	}
	s.addCold(below)
	s.addHot(above...)
	e := newEngine(t, s)

	const cols = `SELECT malo_id, balancing_day, expected, present, missing, surplus FROM completeness `
	row := func(i int, d metering.Date, expected, present, surplus int) string {
		return malo(i) + " " + d.String() + "T00:00:00 " + itoa(expected) + " " + itoa(present) + " " + itoa(expected-present) + " " + itoa(surplus)
	}
	want := []string{
		row(1, d28, 96, 96, 0), row(1, d29, 92, 92, 0), row(1, d30, 96, 96, 0),
		// Appears on the 29th, silent on the 30th.
		row(2, d29, 92, 91, 0), row(2, d30, 96, 0, 0),
		row(3, d28, 96, 96, 1), row(3, d29, 92, 0, 0), row(3, d30, 96, 0, 0),
		row(4, d29, 92, 92, 0), row(4, d30, 96, 0, 0),
		row(5, d28, 96, 0, 0), row(5, d29, 92, 0, 0), row(5, d30, 96, 0, 0),
		row(7, d28, 96, 0, 0), row(7, d29, 92, 0, 0), row(7, d30, 96, 0, 0),
		row(8, d30, 96, 93, 0),
	}
	s.Calls()
	res := query(t, e, cols+`WHERE balancing_day BETWEEN '2026-03-28' AND DATE '2026-03-30' ORDER BY ALL`)
	if got := rowsText(res); !slices.Equal(got, want) {
		t.Fatalf("completeness\n got %v\nwant %v", got, want)
	}
	if !slices.Equal(res.Tiers, []string{"cold", "hot"}) {
		t.Errorf("tiers %v", res.Tiers)
	}
	// The range and the lookback: from midnight 31 days before the 28th
	// to where the gas day of the 30th ends.
	lo, hi := "2026-02-24T23:00:00", "2026-03-31T04:00:00"
	if got, want := s.Calls(), []string{"watermark", "hot[2026-03-29T10:00:00," + hi + ")", "cold[" + lo + "," + hi + ")", "floor"}; !slices.Equal(got, want) {
		t.Errorf("reads %v, want %v", got, want)
	}
	if n := count(t, e, `SELECT count(*) FROM readings_versions WHERE malo_id = '`+malo(4)+`'`); n != 92+12 {
		t.Errorf("meter 4 has %d versions, want 104", n)
	}

	// The same days bounded otherwise, one day alone, and a statement
	// whose range is not extracted: every day from the first stored.
	for _, q := range []struct {
		sql  string
		want []string
	}{
		{cols + `WHERE balancing_day >= '2026-03-28' AND balancing_day < '2026-03-31' ORDER BY ALL`, want},
		{cols + `WHERE balancing_day > DATE '2026-03-27' AND balancing_day <= TIMESTAMP '2026-03-30 12:00' ORDER BY ALL`, want},
		{cols + `WHERE balancing_day = '2026-03-29' AND malo_id IN ('` + malo(2) + `', '` + malo(5) + `') ORDER BY ALL`,
			[]string{row(2, d29, 92, 91, 0), row(5, d29, 92, 0, 0)}},
		{`SELECT malo_id, balancing_day, expected, present, missing, surplus FROM (SELECT * FROM completeness)
			WHERE balancing_day = '2026-03-29' AND malo_id IN ('` + malo(1) + `', '` + malo(4) + `', '` + malo(6) + `') ORDER BY ALL`,
			[]string{row(1, d29, 92, 92, 0), row(4, d29, 92, 92, 0), row(6, d29, 92, 0, 0)}},
	} {
		if got := values(t, e, q.sql); !slices.Equal(got, q.want) {
			t.Errorf("%s\n got %v\nwant %v", q.sql, got, q.want)
		}
	}
	if got := values(t, e, `SELECT sum(missing), sum(surplus), count(DISTINCT malo_id) FROM completeness WHERE balancing_day BETWEEN '2026-03-28' AND '2026-03-30'`); !slices.Equal(got, []string{"952 1 7"}) {
		t.Errorf("totals: %v", got)
	}
	if got := values(t, e, `SELECT column_name, column_type FROM (DESCRIBE completeness)`); !slices.Equal(got, []string{
		"malo_id VARCHAR", "obis_code VARCHAR", "channel VARCHAR", "sparte VARCHAR", "resolution VARCHAR",
		"balancing_day DATE", "from TIMESTAMP WITH TIME ZONE", "to TIMESTAMP WITH TIME ZONE",
		"expected BIGINT", "present BIGINT", "missing BIGINT", "surplus BIGINT", "due BOOLEAN",
	}) {
		t.Errorf("columns: %v", got)
	}
	if got := values(t, e, `SELECT "from", "to" FROM completeness WHERE balancing_day = '2026-03-29' AND malo_id = '`+malo(1)+`'`); !slices.Equal(got, []string{"2026-03-28T23:00:00 2026-03-29T22:00:00"}) {
		t.Errorf("bounds of the 29th: %v", got)
	}

	// The autumn clock change, in the hot tier: only meter 1 delivers,
	// and nothing else was seen in the 31 days before.
	var oct []series.Reading
	for _, d := range []string{"2026-10-24", "2026-10-25", "2026-10-26"} {
		oct = append(oct, quarters(1, date(t, d))...)
	}
	s.addHot(oct...)
	if got, want := values(t, e, cols+`WHERE balancing_day BETWEEN '2026-10-24' AND '2026-10-26' ORDER BY ALL`), []string{
		row(1, date(t, "2026-10-24"), 96, 96, 0), row(1, date(t, "2026-10-25"), 100, 100, 0), row(1, date(t, "2026-10-26"), 96, 96, 0),
	}; !slices.Equal(got, want) {
		t.Errorf("October\n got %v\nwant %v", got, want)
	}
}

// TestCompletenessGas: hourly gas days of 24, 23 and 25 hours, running
// 06:00 to 06:00 local time.
func TestCompletenessGas(t *testing.T) {
	s := newSource(t, gasHourly())
	d27, d28, d29 := date(t, "2026-03-27"), date(t, "2026-03-28"), date(t, "2026-03-29")
	o24, o25 := date(t, "2026-10-24"), date(t, "2026-10-25")
	var rows []series.Reading
	for _, d := range []metering.Date{d27, d28, d29, o24, o25} {
		rows = append(rows, gasHours(1, d)...)
	}
	rows = append(rows, gasHours(2, d28, 22)...)
	// An hour of gas day 28 that is stored as the 27th's: outside its day.
	stray := gasHour(3, cal.GasDayStart(d28))
	stray.BalancingDay = d27
	rows = append(rows, append(gasHours(3, d27), stray)...)
	s.addHot(rows...)
	s.archive(time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC))
	e := newEngine(t, s)
	row := func(i int, d metering.Date, expected, present, surplus int) string {
		return malo(i) + " " + d.String() + "T00:00:00 " + itoa(expected) + " " + itoa(present) + " " + itoa(expected-present) + " " + itoa(surplus)
	}
	const cols = `SELECT malo_id, balancing_day, expected, present, missing, surplus FROM completeness `
	for sql, want := range map[string][]string{
		cols + `WHERE balancing_day BETWEEN '2026-03-27' AND '2026-03-29' ORDER BY ALL`: {
			row(1, d27, 24, 24, 0), row(1, d28, 23, 23, 0), row(1, d29, 24, 24, 0),
			row(2, d28, 23, 22, 0), row(2, d29, 24, 0, 0),
			row(3, d27, 24, 24, 1), row(3, d28, 23, 0, 0), row(3, d29, 24, 0, 0),
		},
		cols + `WHERE balancing_day BETWEEN '2026-10-24' AND '2026-10-25' ORDER BY ALL`: {
			row(1, o24, 25, 25, 0), row(1, o25, 24, 24, 0),
		},
		`SELECT "from", "to", sparte, resolution FROM completeness WHERE balancing_day = '2026-10-24'`: {
			"2026-10-24T04:00:00 2026-10-25T05:00:00 GAS PT1H",
		},
	} {
		if got := values(t, e, sql); !slices.Equal(got, want) {
			t.Errorf("%s\n got %v\nwant %v", sql, got, want)
		}
	}
}

// TestCompletenessDays: the days a statement bounds, and the readings
// they need.
func TestCompletenessDays(t *testing.T) {
	db, err := parser()
	if err != nil {
		t.Fatal(err)
	}
	for sql, want := range map[string]string{
		`SELECT * FROM completeness WHERE balancing_day = '2026-03-29'`:                                        "2026-03-29 2026-03-29",
		`SELECT * FROM completeness WHERE balancing_day > '2026-03-29' AND balancing_day < '2026-04-02'`:       "2026-03-30 2026-04-01",
		`SELECT * FROM completeness c WHERE c.balancing_day >= TIMESTAMP '2026-03-29 06:00'`:                   "2026-03-29 -",
		`SELECT * FROM completeness WHERE balancing_day < TIMESTAMPTZ '2026-03-29 00:30:00+00'`:                "- 2026-03-29",
		`SELECT * FROM completeness WHERE balancing_day BETWEEN '2026-03-01' AND '2026-03-31' AND missing > 0`: "2026-03-01 2026-03-31",
		`SELECT * FROM completeness WHERE balancing_day = '2026-03-29' OR balancing_day = '2026-03-30'`:        "- -",
		`SELECT * FROM completeness JOIN readings USING (malo_id) WHERE balancing_day = '2026-03-29'`:          "- -",
		`WITH c AS (SELECT * FROM completeness) SELECT * FROM c WHERE balancing_day = '2026-03-29'`:            "- -",
		`SELECT * FROM completeness WHERE balancing_day = '2026-03-29' AND balancing_day = '2026-03-30'`:       "2026-03-30 2026-03-29",
		`SELECT * FROM completeness WHERE "from" >= '2026-03-29'`:                                              "- -",
	} {
		a, err := analyze(t.Context(), db, sql, "", nil)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		end := func(d metering.Date, ok bool) string {
			if !ok {
				return "-"
			}
			return d.String()
		}
		if got := end(a.days.lo, a.days.hasLo) + " " + end(a.days.hi, a.days.hasHi); got != want {
			t.Errorf("%s: days %s, want %s", sql, got, want)
		}
		if a.NoReadings {
			t.Errorf("%s reads no readings", sql)
		}
	}
	a, err := analyze(t.Context(), db, `SELECT * FROM completeness WHERE balancing_day BETWEEN '2026-10-24' AND '2026-10-25' AND malo_id = 'x'`, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Midnight 31 days before the 24th (summer time) to 06:00 after the
	// 25th (winter time).
	if from, to := a.Range.From, a.Range.To; !from.Equal(time.Date(2026, 9, 22, 22, 0, 0, 0, time.UTC)) ||
		!to.Equal(time.Date(2026, 10, 26, 5, 0, 0, 0, time.UTC)) || !slices.Equal(a.MaLo, []string{"x"}) {
		t.Errorf("range [%v, %v), market locations %v", from, to, a.MaLo)
	}
}

// rowsText returns the rows of res as values does.
func rowsText(res *Result) []string {
	var out []string
	for _, r := range res.Rows {
		s := ""
		for i, v := range r {
			if i > 0 {
				s += " "
			}
			s += text(v)
		}
		out = append(out, s)
	}
	return out
}

func itoa(n int) string { return text(int64(n)) }

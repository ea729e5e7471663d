package store

import (
	"errors"
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// gasDayValue returns the daily gas value of meter i for the gas day that
// begins at 06:00 Berlin time on date, as the calendar says.
func gasDayValue(t *testing.T, i int, date metering.Date, v uint64) Reading {
	t.Helper()
	cal, err := metering.NewCalendar()
	if err != nil {
		t.Fatal(err)
	}
	from := cal.GasDayStart(date)
	return Reading{
		MaLo: malo(i), OBIS: "7-20:3.0.0", From: from, To: cal.GasDayEnd(date),
		Value: 1_000_000, Unit: metering.KilowattHour, Quality: metering.TrueValue,
		Resolution: metering.Day, Version: v, VersionScope: "9900000000003:" + from.Format("2006-01"),
	}
}

// TestOneRulebook holds invariant 9: every rule a hot write enforces holds
// for a late correction routed to the cold tier too. Each rule is broken
// once above the watermark (the hot tier's write) and once below it (a
// late correction for the cold tier); each time the batch is refused with
// the row named and nothing is written.
func TestOneRulebook(t *testing.T) {
	ctx := t.Context()
	s := newEnv(t).open(t, Options{Tables: []Table{power(), gasDaily()}})
	if err := s.CreatePartitions(ctx, dayN(-1), dayN(30)); err != nil {
		t.Fatal(err)
	}
	const cold, hot = 0, 3 // days below and above W = day 2
	date := func(d int) metering.Date {
		y, m, dd := dayN(d).Date()
		return metering.Date{Year: y, Month: m, Day: dd}
	}
	for d := range 4 {
		mustWrite(t, s, []Reading{qh(1, d, 4, "A", 1, 1000)})
		if _, err := s.Write(ctx, "gas", []Reading{gasDayValue(t, 1, date(d), 1)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"power", "gas"} {
		if out, err := s.Archive(ctx, name, dayN(4)); err != nil || !out.Watermark.Equal(dayN(2)) {
			t.Fatalf("archive %s: %+v, %v", name, out, err)
		}
	}
	count := func(table string) int64 {
		t.Helper()
		res, err := s.Query(ctx, table, `SELECT count(*) FROM readings_versions`)
		if err != nil {
			t.Fatal(err)
		}
		return res.Rows[0][0].(int64)
	}
	before := map[string]int64{"power": count("power"), "gas": count("gas")}

	// The gas days around the clock changes last 23 and 25 hours; a day
	// value of 24 hours on them is off by an hour.
	spring := metering.Date{Year: 2026, Month: time.March, Day: 28}
	autumn := metering.Date{Year: 2025, Month: time.October, Day: 25}
	for _, c := range []struct {
		rule  string
		table string
		kind  series.Kind
		// bad returns the offending reading, on day d (cold or hot) where
		// the rule has no date of its own.
		bad func(d int) Reading
	}{
		{"from off the quarter-hour grid", "power", series.InvalidInput, func(d int) Reading {
			r := qh(2, d, 8, "A", 1, 1000)
			r.From, r.To = r.From.Add(7*time.Minute), r.To.Add(7*time.Minute)
			return r
		}},
		{"a quarter hour lasting an hour", "power", series.InvalidInput, func(d int) Reading {
			r := qh(2, d, 8, "A", 1, 1000)
			r.To = r.From.Add(time.Hour)
			return r
		}},
		{"a gas OBIS code in the power table", "power", series.InvalidInput, func(d int) Reading {
			r := qh(2, d, 8, "A", 1, 1000)
			r.OBIS = "7-20:3.0.0"
			return r
		}},
		{"an electricity OBIS code in the gas table", "gas", series.InvalidInput, func(d int) Reading {
			r := gasDayValue(t, 2, date(d), 1)
			r.OBIS = "1-1:1.29.0"
			return r
		}},
		{"the sparte of the other table", "power", series.InvalidInput, func(d int) Reading {
			r := qh(2, d, 8, "A", 1, 1000)
			r.Commodity = metering.Gas
			return r
		}},
		{"a gas day value from midnight", "gas", series.InvalidInput, func(d int) Reading {
			r := gasDayValue(t, 2, date(d), 1)
			r.From, r.To = r.From.Add(-6*time.Hour), r.To.Add(-6*time.Hour)
			return r
		}},
		{"24 hours on a gas day of 23 or 25", "gas", series.InvalidInput, func(d int) Reading {
			day := spring
			if d == cold {
				day = autumn
			}
			r := gasDayValue(t, 2, day, 1)
			r.To = r.From.Add(24 * time.Hour)
			return r
		}},
		{"a second network operator for a stored reading", "power", series.IntegrityViolation, func(d int) Reading {
			r := qh(1, d, 4, "A", 2, 1000)
			r.VersionScope = "9900000000010:" + r.From.Format("2006-01")
			return r
		}},
		{"a value restated under a stored version", "power", series.IntegrityViolation, func(d int) Reading {
			return qh(1, d, 4, "A", 1, 2000)
		}},
		{"a date out of range", "power", series.InvalidInput, func(d int) Reading {
			r := qh(2, d, 8, "A", 1, 1000)
			at := time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC) // below W
			if d == hot {
				at = time.Date(9999, 6, 1, 0, 0, 0, 0, time.UTC) // above it
			}
			r.From, r.To = at, at.Add(15*time.Minute)
			return r
		}},
		{"year 0", "power", series.InvalidInput, func(d int) Reading {
			r := qh(2, d, 8, "A", 1, 1000)
			r.From = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
			r.To = r.From.Add(15 * time.Minute)
			return r
		}},
	} {
		for _, tier := range []struct {
			name string
			day  int
		}{{"cold", cold}, {"hot", hot}} {
			t.Run(c.rule+"/"+tier.name, func(t *testing.T) {
				good := qh(3, tier.day, 20, "B", 1, 1000)
				if c.table == "gas" {
					good = gasDayValue(t, 3, date(tier.day), 1)
				}
				bad := c.bad(tier.day)
				_, err := s.Write(ctx, c.table, []Reading{good, bad})
				var e *series.Error
				if !errors.As(err, &e) || e.Kind != c.kind || len(e.Rows) != 1 || e.Rows[0] != 1 {
					t.Fatalf("write: %v; want a %v naming row 1", err, c.kind)
				}
				if n := count(c.table); n != before[c.table] {
					t.Fatalf("%s holds %d readings after the refused batch, %d before", c.table, n, before[c.table])
				}
			})
		}
	}
}

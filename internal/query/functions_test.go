package query

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
)

func TestCalendarFunctions(t *testing.T) {
	e := newEngine(t, threeMonths(t))
	for sql, want := range map[string]string{
		`meter_expected_intervals('2026-03-29', 'PT15M', 'STROM')`:                 "92",
		`meter_expected_intervals(DATE '2026-03-30', 'PT15M', 'STROM')`:            "96",
		`meter_expected_intervals(DATE '2026-10-25', 'PT15M', 'STROM')`:            "100",
		`meter_expected_intervals(DATE '2026-03-28', 'PT15M', 'GAS')`:              "92",
		`meter_expected_intervals(DATE '2026-03-29', 'PT15M', 'GAS')`:              "96",
		`meter_expected_intervals(DATE '2026-10-24', 'PT1H', 'GAS')`:               "25",
		`meter_expected_intervals(DATE '2026-03-29', 'P1D', 'STROM')`:              "1",
		`meter_gas_day(TIMESTAMPTZ '2026-03-29 05:30:00+02')`:                      "2026-03-28T00:00:00",
		`meter_gas_day(TIMESTAMPTZ '2026-03-29 06:00:00+02')`:                      "2026-03-29T00:00:00",
		`meter_gas_day(TIMESTAMPTZ '2026-03-28 05:59:59.999999+01')`:               "2026-03-27T00:00:00",
		`meter_local_day(TIMESTAMPTZ '2026-03-28 23:30:00+00')`:                    "2026-03-29T00:00:00",
		`meter_local_day(TIMESTAMPTZ '2026-03-29 21:59:59+00')`:                    "2026-03-29T00:00:00",
		`meter_local_day(TIMESTAMPTZ '2026-03-29 22:00:00+00')`:                    "2026-03-30T00:00:00",
		`meter_local_day(TIMESTAMP '2026-10-24 22:30:00')`:                         "2026-10-25T00:00:00",
		`meter_balancing_day(TIMESTAMPTZ '2026-03-29 03:00:00+00', 'GAS')`:         "2026-03-28T00:00:00",
		`meter_balancing_day(TIMESTAMPTZ '2026-03-29 03:00:00+00', 'STROM')`:       "2026-03-29T00:00:00",
		`meter_balancing_day(NULL, 'GAS')`:                                         "NULL",
		`meter_expected_intervals(DATE '2026-03-29', NULL, 'STROM')`:               "NULL",
		`meter_local_day(NULL)`:                                                    "NULL",
		`typeof(meter_expected_intervals(DATE '2026-03-29', 'PT15M', 'STROM'))`:    "INTEGER",
		`typeof(meter_balancing_day(TIMESTAMPTZ '2026-03-29 03:00:00+00', 'GAS'))`: "DATE",
		`meter_balancing_day_start(DATE '2026-03-29', 'STROM')`:                    "2026-03-28T23:00:00",
		`meter_balancing_day_end(DATE '2026-03-29', 'STROM')`:                      "2026-03-29T22:00:00",
		`meter_balancing_day_start(DATE '2026-10-24', 'GAS')`:                      "2026-10-24T04:00:00",
		`meter_balancing_day_end(DATE '2026-10-24', 'GAS')`:                        "2026-10-25T05:00:00",
		`meter_balancing_day_end(NULL, 'GAS')`:                                     "NULL",
	} {
		got := values(t, e, `SELECT `+sql)
		if !slices.Equal(got, []string{want}) {
			t.Errorf("%s = %v, want %s", sql, got, want)
		}
	}
	for _, sql := range []string{
		`SELECT meter_balancing_day(TIMESTAMPTZ '2026-03-29 03:00:00+00', 'Strom')`,
		`SELECT meter_expected_intervals(DATE '2026-03-29', 'PT60M', 'STROM')`,
		`SELECT meter_expected_intervals(DATE '2026-03-29', 'P1M', 'STROM')`,
		`SELECT meter_expected_intervals(DATE '2026-03-29', 'PT15M', '')`,
		`SELECT meter_balancing_day_start(DATE '2026-03-29', 'gas')`,
	} {
		if _, err := queryOf(t.Context(), e, sql); err == nil || !strings.Contains(err.Error(), "meter_") {
			t.Errorf("%s: %v, want an error naming the function", sql, err)
		}
	}
}

// TestCalendarFunctionsAreTheCalendar compares the functions with package
// metering at every quarter hour around both clock changes of 2026, and
// with the balancing day stored with the readings.
func TestCalendarFunctionsAreTheCalendar(t *testing.T) {
	e := newEngine(t, threeMonths(t))
	for _, start := range []string{"2026-03-27", "2026-10-23"} {
		res := query(t, e, `SELECT ts, meter_local_day(ts), meter_gas_day(ts), meter_balancing_day(ts, 'GAS'), meter_balancing_day(ts, 'WAERME')
			FROM generate_series(TIMESTAMPTZ '`+start+` 00:00:00+00', TIMESTAMPTZ '`+start+` 00:00:00+00' + INTERVAL 4 DAY, INTERVAL 15 MINUTE) AS g(ts)`)
		if len(res.Rows) != 4*96+1 {
			t.Fatalf("%d rows", len(res.Rows))
		}
		for _, r := range res.Rows {
			ts := r[0].(time.Time)
			want := []metering.Date{cal.LocalDay(ts), cal.GasDay(ts), cal.BalancingDay(ts, metering.Gas), cal.BalancingDay(ts, metering.Heat)}
			for i, w := range want {
				if got := r[i+1].(time.Time); got != day(w) {
					t.Fatalf("%v: column %d = %v, want %v", ts, i+1, got, w)
				}
			}
		}
		res = query(t, e, `SELECT d, meter_expected_intervals(d, 'PT15M', 'STROM'), meter_expected_intervals(d, 'PT5M', 'GAS')
			FROM (SELECT CAST(g AS DATE) AS d FROM generate_series(DATE '`+start+`', DATE '`+start+`' + 4, INTERVAL 1 DAY) AS s(g))`)
		for _, r := range res.Rows {
			ts := r[0].(time.Time)
			d := metering.Date{Year: ts.Year(), Month: ts.Month(), Day: ts.Day()}
			power, _ := cal.IntervalsPerDay(d, metering.QuarterHour, metering.Electricity)
			gas, _ := cal.IntervalsPerDay(d, metering.FiveMinutes, metering.Gas)
			if r[1].(int32) != int32(power) || r[2].(int32) != int32(gas) {
				t.Fatalf("%v: %v %v, want %d %d", d, r[1], r[2], power, gas)
			}
		}
	}
	if n := count(t, e, `SELECT count(*) FROM readings WHERE balancing_day <> meter_balancing_day("from", sparte)`); n != 0 {
		t.Fatalf("%d readings with another balancing day", n)
	}
}

// TestCalendarFunctionsRefuseInfinity: the calendar has no day for
// DuckDB's infinite timestamps and dates; each function refuses them as
// an invalid statement naming itself, where it answered the day of the
// extreme value that stands for infinity (294247-01-10, 96 intervals).
func TestCalendarFunctionsRefuseInfinity(t *testing.T) {
	e := newEngine(t, threeMonths(t))
	for _, sql := range []string{
		`SELECT meter_local_day('infinity')`,
		`SELECT meter_local_day('-infinity'::TIMESTAMPTZ)`,
		`SELECT meter_local_day('infinity'::TIMESTAMP)`,
		`SELECT meter_gas_day('infinity')`,
		`SELECT meter_balancing_day('-infinity', 'GAS')`,
		`SELECT meter_expected_intervals('infinity'::DATE, 'PT15M', 'STROM')`,
		`SELECT meter_expected_intervals('-infinity'::DATE, 'PT15M', 'STROM')`,
		`SELECT meter_balancing_day_start('infinity'::DATE, 'STROM')`,
		`SELECT meter_balancing_day_end('-infinity'::DATE, 'GAS')`,
	} {
		fn := sql[len("SELECT "):strings.Index(sql, "(")]
		if _, err := queryOf(t.Context(), e, sql); !errors.Is(err, ErrInvalidQuery) || !strings.Contains(err.Error(), fn) || !strings.Contains(err.Error(), "infinity") {
			t.Errorf("%s: %v; want an invalid statement naming %s and infinity", sql, err, fn)
		}
	}
	// The largest finite ones still have their day.
	for sql, want := range map[string]string{
		`meter_local_day(TIMESTAMPTZ '9999-12-31 12:00:00+00')`:                 "9999-12-31T00:00:00",
		`meter_expected_intervals(DATE '9999-12-31', 'PT15M', 'STROM')`:         "96",
		`meter_local_day(TIMESTAMPTZ '294246-12-31 12:00:00+00')`:               "294246-12-31T00:00:00",
		`meter_expected_intervals(DATE '5881580-07-10', 'PT15M', 'STROM') > 90`: "true",
	} {
		if got := values(t, e, `SELECT `+sql); !slices.Equal(got, []string{want}) {
			t.Errorf("%s = %v, want %s", sql, got, want)
		}
	}
}

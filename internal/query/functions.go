package query

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/meterstore/meterstore/metering"
)

// The calendar functions of every query, thin over package metering:
//
//	meter_local_day(TIMESTAMPTZ) DATE                        the Berlin day
//	meter_gas_day(TIMESTAMPTZ) DATE                          the gas day, 06:00 to 06:00
//	meter_balancing_day(TIMESTAMPTZ, VARCHAR sparte) DATE    the gas day for GAS, else the Berlin day
//	meter_expected_intervals(DATE, VARCHAR resolution, VARCHAR sparte) INTEGER
//	                                                         intervals in a balancing day: 92, 96, 100 quarter hours
//	meter_balancing_day_start(DATE, VARCHAR sparte) TIMESTAMPTZ  where a balancing day begins: midnight, 06:00 for GAS
//	meter_balancing_day_end(DATE, VARCHAR sparte) TIMESTAMPTZ    where it ends, 23 to 25 hours later
//
// A NULL argument gives NULL; an unknown sparte or resolution, or an
// infinite time or date, is an error.

var calendar, calendarErr = metering.NewCalendar()

// A function is a scalar function of fixed arity, called row by row.
type function struct {
	name string
	in   []duckdb.Type
	out  duckdb.Type
	fn   func(args []driver.Value) (any, error)
}

var functions = []function{
	{"meter_local_day", []duckdb.Type{duckdb.TYPE_TIMESTAMP_TZ}, duckdb.TYPE_DATE, func(a []driver.Value) (any, error) {
		t, err := instant(a[0])
		if err != nil {
			return nil, err
		}
		return day(calendar.LocalDay(t)), nil
	}},
	{"meter_gas_day", []duckdb.Type{duckdb.TYPE_TIMESTAMP_TZ}, duckdb.TYPE_DATE, func(a []driver.Value) (any, error) {
		t, err := instant(a[0])
		if err != nil {
			return nil, err
		}
		return day(calendar.GasDay(t)), nil
	}},
	{"meter_balancing_day", []duckdb.Type{duckdb.TYPE_TIMESTAMP_TZ, duckdb.TYPE_VARCHAR}, duckdb.TYPE_DATE, func(a []driver.Value) (any, error) {
		t, err := instant(a[0])
		if err != nil {
			return nil, err
		}
		com, err := metering.ParseCommodity(fmt.Sprint(a[1]))
		if err != nil {
			return nil, err
		}
		return day(calendar.BalancingDay(t, com)), nil
	}},
	{"meter_expected_intervals", []duckdb.Type{duckdb.TYPE_DATE, duckdb.TYPE_VARCHAR, duckdb.TYPE_VARCHAR}, duckdb.TYPE_INTEGER, func(a []driver.Value) (any, error) {
		t, err := instant(a[0])
		if err != nil {
			return nil, err
		}
		res, err := metering.ParseResolution(fmt.Sprint(a[1]))
		if err != nil {
			return nil, err
		}
		com, err := metering.ParseCommodity(fmt.Sprint(a[2]))
		if err != nil {
			return nil, err
		}
		n, err := calendar.IntervalsPerDay(metering.Date{Year: t.Year(), Month: t.Month(), Day: t.Day()}, res, com)
		if err != nil {
			return nil, err
		}
		return int32(n), nil
	}},
	{"meter_balancing_day_start", []duckdb.Type{duckdb.TYPE_DATE, duckdb.TYPE_VARCHAR}, duckdb.TYPE_TIMESTAMP_TZ, func(a []driver.Value) (any, error) {
		d, com, err := balancingDay(a)
		if err != nil {
			return nil, err
		}
		return calendar.BalancingDayStart(d, com), nil
	}},
	{"meter_balancing_day_end", []duckdb.Type{duckdb.TYPE_DATE, duckdb.TYPE_VARCHAR}, duckdb.TYPE_TIMESTAMP_TZ, func(a []driver.Value) (any, error) {
		d, com, err := balancingDay(a)
		if err != nil {
			return nil, err
		}
		return calendar.BalancingDayEnd(d, com), nil
	}},
}

// balancingDay reads the arguments (DATE, VARCHAR sparte).
func balancingDay(a []driver.Value) (metering.Date, metering.Commodity, error) {
	t, err := instant(a[0])
	if err != nil {
		return metering.Date{}, 0, err
	}
	com, err := metering.ParseCommodity(fmt.Sprint(a[1]))
	if err != nil {
		return metering.Date{}, 0, err
	}
	return metering.Date{Year: t.Year(), Month: t.Month(), Day: t.Day()}, com, nil
}

// instant returns the time v, refusing DuckDB's infinite timestamps and
// dates: the calendar has no day for them, and one computed from the
// extreme values that stand for them (294247-01-10) would be a lie.
func instant(v driver.Value) (time.Time, error) {
	t, ok := v.(time.Time)
	if !ok {
		return time.Time{}, fmt.Errorf("%v (%T) is not a time", v, v)
	}
	if slices.ContainsFunc(infinities, t.Equal) {
		return time.Time{}, errors.New("infinity and -infinity have no day in the calendar: give a finite time or date")
	}
	return t.UTC(), nil
}

// infinities are DuckDB's infinite timestamps and dates as duckdb-go hands
// them to a function: the extreme values of their representations, which
// no finite one has.
var infinities = []time.Time{
	time.UnixMicro(math.MaxInt64),                            // TIMESTAMP, TIMESTAMPTZ infinity
	time.UnixMicro(-math.MaxInt64),                           // -infinity
	time.Date(5881580, time.July, 11, 0, 0, 0, 0, time.UTC),  // DATE infinity
	time.Date(-5877641, time.June, 24, 0, 0, 0, 0, time.UTC), // -infinity
}

func day(d metering.Date) time.Time { return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC) }

// registerFunctions registers the calendar functions on conn.
func registerFunctions(conn *sql.Conn) error {
	if calendarErr != nil {
		return fmt.Errorf("query: %w", calendarErr)
	}
	for _, f := range functions {
		cfg, err := f.config()
		if err != nil {
			return fmt.Errorf("query: function %s: %w", f.name, err)
		}
		if err := duckdb.RegisterScalarUDF(conn, f.name, &udf{cfg: cfg, f: f}); err != nil {
			return fmt.Errorf("query: function %s: %w", f.name, err)
		}
	}
	return nil
}

func (f function) config() (duckdb.ScalarFuncConfig, error) {
	var cfg duckdb.ScalarFuncConfig
	for _, t := range f.in {
		ti, err := duckdb.NewTypeInfo(t)
		if err != nil {
			return cfg, err
		}
		cfg.InputTypeInfos = append(cfg.InputTypeInfos, ti)
	}
	out, err := duckdb.NewTypeInfo(f.out)
	cfg.ResultTypeInfo = out
	return cfg, err
}

// udf adapts a function to duckdb.ScalarFunc.
type udf struct {
	cfg duckdb.ScalarFuncConfig
	f   function
}

func (u *udf) Config() duckdb.ScalarFuncConfig { return u.cfg }

func (u *udf) Executor() duckdb.ScalarFuncExecutor {
	return duckdb.ScalarFuncExecutor{RowExecutor: func(args []driver.Value) (v any, err error) {
		// A panic must not unwind through DuckDB's C++ frames.
		defer func() {
			if p := recover(); p != nil {
				v, err = nil, fmt.Errorf("%s: %v", u.f.name, p)
			}
		}()
		v, err = u.f.fn(args)
		if err != nil {
			err = fmt.Errorf("%s: %w", u.f.name, err)
		}
		return v, err
	}}
}

package metering_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/meterstore/meterstore/metering"
)

func ExampleParseOBIS() {
	o, err := metering.ParseOBIS("1-0:1.8.0*255")
	if err != nil {
		panic(err)
	}
	medium, _ := o.Medium()
	fmt.Println(o, medium)
	// Output: 1-0:1.8.0 STROM
}

func ExampleParseMaLo() {
	_, err := metering.ParseMaLo("41373559242")
	fmt.Println(errors.Is(err, metering.ErrCheckDigit))
	m, _ := metering.MaLoFromPrefix("4137355924")
	fmt.Println(m)
	// Output:
	// true
	// 41373559241
}

func ExampleCalendar_IntervalsPerDay() {
	cal, err := metering.NewCalendar()
	if err != nil {
		panic(err)
	}
	for _, day := range []string{"2026-03-29", "2026-06-01", "2026-10-25"} {
		d, _ := metering.ParseDate(day)
		n, _ := cal.IntervalsPerDay(d, metering.QuarterHour, metering.Electricity)
		fmt.Println(d, n)
	}
	// Output:
	// 2026-03-29 92
	// 2026-06-01 96
	// 2026-10-25 100
}

func ExampleCalendar_GasDay() {
	cal, err := metering.NewCalendar()
	if err != nil {
		panic(err)
	}
	// 05:30 in Berlin still belongs to the previous day's gas day.
	t := time.Date(2026, 1, 15, 4, 30, 0, 0, time.UTC)
	fmt.Println(cal.LocalDay(t), cal.GasDay(t))
	d := cal.GasDay(t)
	fmt.Println(cal.GasDayStart(d), cal.GasDayEnd(d))
	// Output:
	// 2026-01-15 2026-01-14
	// 2026-01-14 05:00:00 +0000 UTC 2026-01-15 05:00:00 +0000 UTC
}

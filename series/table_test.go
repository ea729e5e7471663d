package series

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
)

func TestTableValidate(t *testing.T) {
	if err := lastgang("lastgang").Validate(); err != nil {
		t.Fatal(err)
	}
	point := &Table{Name: "register", TimeModel: Point, Width: Monthly}
	if err := point.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(*Table){
		"empty name":        func(t *Table) { t.Name = "" },
		"upper case":        func(t *Table) { t.Name = "Lastgang" },
		"leading digit":     func(t *Table) { t.Name = "1x" },
		"quote":             func(t *Table) { t.Name = `a"b` },
		"too long":          func(t *Table) { t.Name = strings.Repeat("x", MaxNameLen+1) },
		"partition-like":    func(t *Table) { t.Name = "x_p20260101" },
		"metadata":          func(t *Table) { t.Name = "hot_tables" },
		"system schema":     func(t *Table) { t.Name = "system" },
		"tiers schema":      func(t *Table) { t.Name = "tiers" },
		"superseded column": func(t *Table) { t.Columns = []Column{{Name: ColumnSuperseded}} },
		"no time model":     func(t *Table) { t.TimeModel = 0 },
		"no width":          func(t *Table) { t.Width = 0 },
		"negative headroom": func(t *Table) { t.Headroom = -time.Hour },
		"bad commodity":     func(t *Table) { t.Commodity = 9 },
		"bad resolution":    func(t *Table) { t.Resolutions = []metering.Resolution{42} },
		"builtin column":    func(t *Table) { t.Columns = []Column{{Name: "version"}} },
		"twice":             func(t *Table) { t.Columns = []Column{{Name: "a"}, {Name: "a"}} },
		"bad column name":   func(t *Table) { t.Columns = []Column{{Name: "A"}} },
		"long column name":  func(t *Table) { t.Columns = []Column{{Name: strings.Repeat("c", 58)}} },
		"bad type":          func(t *Table) { t.Columns = []Column{{Name: "a", Type: 7}} },
		"bad coded bigint":  func(t *Table) { t.Columns = []Column{{Name: "a", Type: BigInt, Values: []string{"1", "x"}}} },
		"empty coded":       func(t *Table) { t.Columns = []Column{{Name: "a", Values: []string{""}}} },
		"point resolutions": func(t *Table) { t.TimeModel = Point },
		"identity source":   func(t *Table) { t.Columns = []Column{{Name: ColumnSourceRef, Identity: true}} },
		"bigint source":     func(t *Table) { t.Columns = []Column{{Name: ColumnSourceKind, Type: BigInt}} },
		"coded source":      func(t *Table) { t.Columns = []Column{{Name: ColumnSourceKind, Values: []string{"csv"}}} },
	} {
		tab := lastgang("lastgang")
		change(tab)
		if err := tab.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		} else {
			wantError(t, err, InvalidConfig)
		}
	}
}

func TestDecimal(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Decimal
		out  string
	}{
		{"0", 0, "0.000000"},
		{"1.5", 1_500_000, "1.500000"},
		{"-0.000001", -1, "-0.000001"},
		{"+12.25", 12_250_000, "12.250000"},
		{".5", 500_000, "0.500000"},
		{"999999999999.999999", MaxDecimal, "999999999999.999999"},
	} {
		d, err := ParseDecimal(c.in)
		if err != nil || d != c.want || d.String() != c.out {
			t.Errorf("ParseDecimal(%q) = %d (%s), %v", c.in, d, d, err)
		}
	}
	for _, bad := range []string{"", "-", ".", "1.", "1.0000001", "1e3", "1,5", "0x10", "1000000000000", " 1"} {
		if _, err := ParseDecimal(bad); err == nil {
			t.Errorf("ParseDecimal(%q) accepted", bad)
		}
	}
}

func TestWidth(t *testing.T) {
	at := time.Date(2026, 12, 31, 23, 30, 0, 0, time.FixedZone("CET", 3600))
	if got := Daily.Start(at); !got.Equal(time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("Daily.Start = %v", got)
	}
	if got := Monthly.Next(Monthly.Start(at)); !got.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("Monthly.Next = %v", got)
	}
}

// TestDailyStart holds the daily partition start to the calendar's UTC
// midnight, in UTC, across the epoch, leap days and the day's edges.
func TestDailyStart(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Time{
		time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1900, 3, 1, 12, 0, 0, 0, time.UTC),
		time.Date(2024, 2, 29, 23, 45, 0, 0, time.UTC),
		time.Date(2026, 3, 29, 1, 30, 0, 0, berlin),
		time.Date(2026, 10, 25, 2, 15, 0, 0, berlin),
		time.Date(2026, 3, 4, 0, 0, 0, 1, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
	} {
		u := at.UTC()
		want := time.Date(u.Year(), u.Month(), u.Day(), 0, 0, 0, 0, time.UTC)
		if got := Daily.Start(at); got != want {
			t.Errorf("Daily.Start(%v) = %v (%s), want %v", at, got, got.Location(), want)
		}
	}
}

func lastgang(name string) *Table {
	return &Table{
		Name:        name,
		TimeModel:   Interval,
		Commodity:   metering.Electricity,
		Resolutions: []metering.Resolution{metering.QuarterHour},
		Width:       Daily,
		Headroom:    24 * time.Hour,
	}
}

func wantError(t testing.TB, err error, k Kind) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Kind != k {
		t.Fatalf("error %v (%T), want *Error of kind %v", err, err, k)
	}
	return e
}

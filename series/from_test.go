package series

import (
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
)

// TestFromOutOfRange: a from of 0001-01-01, which a delivery states as
// 0001-01-01T00:00:00Z and Go's zero time is too, is refused as out of the
// supported range, saying the range, not as "from not set"; so are the
// instants just outside it, and its ends pass.
func TestFromOutOfRange(t *testing.T) {
	cal, err := metering.NewCalendar()
	if err != nil {
		t.Fatal(err)
	}
	tab := &Table{Name: "register", TimeModel: Point, Commodity: metering.Electricity, Width: Monthly}
	stated, err := time.Parse(time.RFC3339, "0001-01-01T00:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	r := func(from time.Time) Reading {
		return Reading{MaLo: "51238696781", OBIS: "1-1:1.8.0", From: from, Value: 1000, Unit: metering.KilowattHour,
			Quality: metering.TrueValue, Version: 1, VersionScope: "9900000000003:2026-03"}
	}
	for _, from := range []time.Time{stated, {}, MinFrom.Add(-time.Microsecond), MaxFrom} {
		var d Derived
		row := r(from)
		err := NewChecker(tab, cal).Check(&row, &d)
		if err == nil || !strings.Contains(err.Error(), "out of the supported range: want an instant from 1970-01-01T00:00:00Z to before 9999-01-01T00:00:00Z") ||
			strings.Contains(err.Error(), "not set") {
			t.Errorf("from %s: %v", from.Format(time.RFC3339Nano), err)
		}
	}
	for _, from := range []time.Time{MinFrom, MaxFrom.Add(-time.Hour)} {
		var d Derived
		row := r(from)
		if err := NewChecker(tab, cal).Check(&row, &d); err != nil {
			t.Errorf("from %s: %v", from.Format(time.RFC3339), err)
		}
	}
}

package hot

import (
	"math"
	"testing"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// TestWriteScanRoundTripBinary: the rows the tier encodes itself for the
// direct copy (copybin.go) read back as written, at the ends of the
// ranges of value and version, both encoded in the transaction (the first
// write, before the table's layout is known) and ahead of it (later ones).
func TestWriteScanRoundTripBinary(t *testing.T) {
	h, _ := newTier(t, Options{})
	tab := lastgang("lastgang")
	declare(t, h, tab)
	values := []series.Decimal{0, -1, 1, series.MaxDecimal, -series.MaxDecimal, 123_000_000, -10_000_000_000, 99_990_000}
	versions := []uint64{0, 1, 9999, 10000, 100_000_000, math.MaxUint64}
	var all []series.Reading
	for m, v := range versions {
		rows := meterDay(m, v)
		for i := range rows {
			rows[i].Value = values[(i+m)%len(values)]
		}
		mustWrite(t, h, tab, rows)
		all = append(all, rows...)
	}
	if _, ok := h.knownLayout(tab); !ok {
		t.Fatal("layout not remembered after a write: no batch was encoded ahead")
	}
	cal, err := metering.NewCalendar()
	if err != nil {
		t.Fatal(err)
	}
	got := scanAll(t, h, tab)
	if len(got) != len(all) {
		t.Fatalf("scanned %d readings, want %d", len(got), len(all))
	}
	for i, g := range got {
		w := all[i] // written in primary key order already
		if !g.From.Equal(w.From) || !g.To.Equal(w.To) || g.Value != w.Value || g.Version != w.Version || g.Quality != w.Quality {
			t.Fatalf("reading %d: got %v-%v %d v%d %v, want %v-%v %d v%d %v", i,
				g.From, g.To, g.Value, g.Version, g.Quality, w.From, w.To, w.Value, w.Version, w.Quality)
		}
		if want := cal.BalancingDay(w.From, metering.Electricity); g.BalancingDay != want {
			t.Fatalf("reading %d: balancing day %v, want %v", i, g.BalancingDay, want)
		}
	}
}

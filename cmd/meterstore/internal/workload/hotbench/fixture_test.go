package hotbench

import (
	"reflect"
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

func TestFixture(t *testing.T) {
	cal, err := metering.NewCalendar()
	if err != nil {
		t.Fatal(err)
	}
	f := DefaultFixture()
	f.Meters = 1000
	gen, err := f.Start(cal)
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		malo string
		from time.Time
	}
	versions := map[key][]series.Reading{}
	rows, batches, corrections := 0, 0, 0
	var sum float64
	for b := gen.Next(); b != nil; b = gen.Next() {
		batches++
		for _, r := range b {
			rows++
			k := key{r.MaLo, r.From}
			versions[k] = append(versions[k], r)
			if r.Value%1000 != 0 || r.Value < 0 {
				t.Fatalf("value %s: want three decimal places, not negative", r.Value)
			}
			sum += float64(r.Value) / 1e6
			if len(versions[k]) == 2 {
				corrections++
				if first := versions[k][0]; r.Version <= first.Version || r.VersionScope != first.VersionScope {
					t.Fatalf("correction %+v of %+v", r, first)
				}
			}
		}
	}
	if rows != gen.Rows() || rows != (1000+30)*96 || batches != 11 || corrections != 30*96 {
		t.Fatalf("%d rows (want %d), %d batches, %d corrected readings", rows, gen.Rows(), batches, corrections)
	}
	// Households of 1,500 to 6,000 kWh a year use about 10 kWh a day.
	if perMeterDay := sum / 1030; perMeterDay < 5 || perMeterDay > 20 {
		t.Fatalf("%.1f kWh per meter-day", perMeterDay)
	}
	// Deterministic.
	again, _ := f.Start(cal)
	if a, b := again.Next(), func() []series.Reading { g, _ := f.Start(cal); return g.Next() }(); len(a) != len(b) || !reflect.DeepEqual(a[500], b[500]) {
		t.Fatal("two generators of one fixture differ")
	}
}

package mscons

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/internal/mscons/msconstest"
	"github.com/meterstore/meterstore/metering"
)

// TestVersion22e: a 2.2e message is read like a 2.4c one, except that its
// LOC+172 must name a metering point.
func TestVersion22e(t *testing.T) {
	const meloOf = "DE0001234567890000000000000000002"
	o := opts()
	o.MaLoOf = map[string]string{melo: "41234567896", meloOf: "51234567895"}
	v24 := read(t, fixture(t, "mapping.edi"), o)[0]
	in := strings.NewReplacer("MSCONS:D:04B:UN:2.4c", "MSCONS:D:04B:UN:2.2e", "LOC+172+51234567895", "LOC+172+"+meloOf).
		Replace(fixture(t, "mapping.edi"))
	v22 := read(t, in, o)[0]
	if v22.Err != nil || len(v22.Readings) != len(v24.Readings) {
		t.Fatalf("2.2e: %v, %d readings, want %d", v22.Err, len(v22.Readings), len(v24.Readings))
	}
	for i, r := range v22.Readings {
		w := v24.Readings[i]
		if w.MeLo == "" {
			w.MeLo = meloOf
		}
		if !reflect.DeepEqual(r, w) {
			t.Errorf("reading %d: %+v, want %+v", i, r, w)
		}
	}

	// The market location id is not 2.2e's.
	in = strings.Replace(fixture(t, "mapping.edi"), "MSCONS:D:04B:UN:2.4c", "MSCONS:D:04B:UN:2.2e", 1)
	m := read(t, in, o)[0]
	if m.Err == nil || len(m.Readings) != 0 || !strings.Contains(m.Err.Error(), `segment 9 (LOC): location id "51234567895": MSCONS 2.2e names a 33-character metering point`) {
		t.Errorf("11-digit LOC in 2.2e: %v", m.Err)
	}
}

// TestImpliedUnit: time integral 3 (D 10), as the 2.2e samples send it
// without a unit, is energy; an instantaneous value (D 7) implies none.
func TestImpliedUnit(t *testing.T) {
	for obis, want := range map[string]metering.Unit{"1-1?:1.10.0": metering.KilowattHour, "1-1?:3.10.0": metering.KilovarHour} {
		in := strings.Replace(fixture(t, "mapping.edi"), "PIA+5+1-1?:1.29.0:SRW", "PIA+5+"+obis+":SRW", 1)
		m := read(t, in, opts())[0]
		if m.Err != nil {
			t.Errorf("%s: %v", obis, m.Err)
		} else if m.Readings[1].Unit != want {
			t.Errorf("%s: unit of QTY+67 %v, want %v", obis, m.Readings[1].Unit, want)
		}
	}
	in := strings.Replace(fixture(t, "mapping.edi"), "PIA+5+1-1?:1.29.0:SRW", "PIA+5+1-1?:1.7.0:SRW", 1)
	if m := read(t, in, opts())[0]; m.Err == nil || !strings.Contains(m.Err.Error(), "segment 17 (QTY): no measure unit, and OBIS code 1-1:1.7.0 implies none") {
		t.Errorf("D 7: %v", m.Err)
	}
}

// TestMsconsconverterSamples reads the interchanges written by others
// (testdata/msconsconverter). As published, the 2.2e load profiles are
// refused: every day has the quarter hours 20:00-20:16 and 20:16-20:30,
// some 01:30-01:55 and 01:55-02:00, which lie on no grid, and 2015-12-20
// is garbled. Put on the grid (msconstest.OnGrid), each value must come
// out with the interval its DTM segments give, which a regular expression
// over the raw text finds independently of the tokenizer.
func TestMsconsconverterSamples(t *testing.T) {
	const meloUS = "US0001062600000001000000022345671"
	malo, err := metering.MaLoFromPrefix("5100000000")
	if err != nil {
		t.Fatal(err)
	}
	o := opts()
	o.MaLoOf = map[string]string{meloUS: malo.String()}
	triple := regexp.MustCompile(`QTY\+220:([0-9,]+)'DTM\+163:(\d{12})\?\+01:303'DTM\+164:(\d{12})\?\+01:303'`)
	for _, name := range []string{"MSCONS_TL_SAMPLE01.txt", "MSCONS_TL_SAMPLE02.txt"} {
		t.Run(name, func(t *testing.T) {
			raw := fixture(t, "msconsconverter/"+name)
			ms := read(t, raw, o)
			if len(ms) != 1 || ms[0].Err == nil || !strings.Contains(ms[0].Err.Error(), "segment 256 (DTM): an interval of 16m0s from 2015-12-01T19:00:00Z is no resolution") {
				t.Fatalf("as published: %+v", ms)
			}
			grid, floored, dropped := msconstest.OnGrid(raw)
			if floored != 68 || dropped != 8 {
				t.Errorf("%d DTM segments floored, %d values dropped; want 68 and 8", floored, dropped)
			}
			ms = read(t, grid, o)
			if len(ms) != 1 || ms[0].Err != nil {
				t.Fatalf("on the grid: %+v", ms)
			}
			m := ms[0]
			if m.Sender != "1234567889111" || m.Document != "13337815E25-1" || m.Version != 20160112124700 {
				t.Errorf("message %+v", m)
			}
			want := triple.FindAllStringSubmatch(grid, -1)
			if len(want) != 31*96-8 || len(m.Readings) != len(want) {
				t.Fatalf("%d readings, %d QTY triples in the text, want %d each", len(m.Readings), len(want), 31*96-8)
			}
			at := func(s string) time.Time {
				t.Helper()
				v, err := time.Parse("200601021504-07", s+"+01")
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			for i, w := range want {
				r := m.Readings[i]
				from, to := at(w[2]), at(w[3])
				if r.MaLo != malo.String() || r.MeLo != meloUS || r.OBIS != "1-1:1.10.0" || r.Unit != metering.KilowattHour ||
					r.Quality != metering.TrueValue || r.Resolution != metering.QuarterHour || r.VersionScope != "1234567889111:2015-12" ||
					!r.From.Equal(from) || !r.To.Equal(to) || r.Value != dec(strings.Replace(w[1], ",", ".", 1)) {
					t.Fatalf("reading %d: %+v, want %s from %s to %s", i, r, w[1], from, to)
				}
			}
		})
	}
	// The third is MSCONS 2.4b, whose values are curtailed energy (PIA+5
	// AUA:Z08) rather than an OBIS code: refused, as every other version.
	ms := read(t, fixture(t, "msconsconverter/MSCONS_TL_Multiple_LOC_SAMPLE.txt"), o)
	if len(ms) != 2 {
		t.Fatalf("%d messages", len(ms))
	}
	for _, m := range ms {
		if m.Err == nil || len(m.Readings) != 0 || !strings.Contains(m.Err.Error(), "segment 1 (UNH): message MSCONS:D:04B:UN:2.4b is not supported") {
			t.Errorf("message %d: %v", m.Number, m.Err)
		}
	}
}

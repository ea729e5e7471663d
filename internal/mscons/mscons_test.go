package mscons

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/internal/edifact"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

var power = &series.Table{Name: "power", TimeModel: series.Interval, Commodity: metering.Electricity,
	Resolutions: []metering.Resolution{metering.QuarterHour}, Width: series.Daily}

const melo = "DE0001234567890000000000000000001"

func opts() Options {
	return Options{Table: power, MaLoOf: map[string]string{melo: "41234567896"}}
}

func fixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func read(t testing.TB, in string, o Options) []Message {
	t.Helper()
	ic, err := edifact.Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := Read(ic, o)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestMapping: each rule of the MIG as the reader applies it, from a
// fixture written from the guide.
func TestMapping(t *testing.T) {
	ms := read(t, fixture(t, "mapping.edi"), opts())
	if len(ms) != 1 || ms[0].Err != nil {
		t.Fatalf("messages %+v", ms)
	}
	m := ms[0]
	if m.Ref != "MSG1" || m.Document != "DOC0001" || m.Sender != "9900000000003" || m.Version != 20260330101500 {
		t.Errorf("message %+v", m)
	}
	type row struct {
		malo, melo, obis string
		from             string
		value            string
		unit             metering.Unit
		q                metering.Quality
	}
	want := []row{
		{"51234567895", "", "1-1:1.29.0", "2026-03-29T22:00:00Z", "1.5", metering.KilowattHour, metering.TrueValue},
		{"51234567895", "", "1-1:1.29.0", "2026-03-29T22:15:00Z", "2.25", metering.KilowattHour, metering.Substitute}, // +02 offset, unit implied
		{"51234567895", "", "1-1:1.29.0", "2026-03-29T22:30:00Z", "-0.5", metering.KilowattHour, metering.Proposed},   // 203: Berlin time
		{"51234567895", "", "1-1:1.29.0", "2026-03-29T22:45:00Z", "0", metering.KilowattHour, metering.Unusable},
		{"51234567895", "", "1-1:1.29.0", "2026-03-29T23:00:00Z", "3", metering.KilowattHour, metering.Forecast},
		{"51234567895", "", "1-1:1.29.0", "2026-03-29T23:15:00Z", "4.000001", metering.KilowattHour, metering.Summed},
		{"51234567895", "", "1-1:1.29.0", "2026-03-29T23:30:00Z", "5", metering.KilowattHour, metering.Provisional},
		{"41234567896", melo, "1-1:2.29.0", "2026-03-29T22:00:00Z", "7", metering.KilowattHour, metering.TrueValue}, // MeLo -> MaLo
	}
	if len(m.Readings) != len(want) {
		t.Fatalf("%d readings, want %d", len(m.Readings), len(want))
	}
	for i, w := range want {
		r := m.Readings[i]
		from := utc(w.from)
		if r.MaLo != w.malo || r.MeLo != w.melo || r.OBIS != w.obis || !r.From.Equal(from) || !r.To.Equal(from.Add(15*time.Minute)) ||
			r.Value != dec(w.value) || r.Unit != w.unit || r.Quality != w.q ||
			r.Resolution != metering.QuarterHour || r.Version != 20260330101500 || r.VersionScope != "9900000000003:2026-03" {
			t.Errorf("reading %d: %+v, want %+v", i, r, w)
		}
	}
	if m.Segments[0] != 14 || m.Segments[7] != 40 {
		t.Errorf("QTY segments %v", m.Segments)
	}
}

// day writes an interchange of one message with every quarter hour of the
// Berlin day d, dated in Berlin local time with its offset, as 303 allows.
func day(d metering.Date, doc, docTime string, value func(i int) string) string {
	cal, _ := metering.NewCalendar()
	var b strings.Builder
	seg := func(f string, args ...any) { fmt.Fprintf(&b, f+"'\n", args...) }
	seg("UNA:+.? ")
	seg("UNB+UNOC:3+9900000000003:500+9900000000010:500+%s+%s++TL", "260401:1200", "IC"+doc)
	n := 0
	mseg := func(f string, args ...any) { n++; seg(f, args...) }
	mseg("UNH+1+MSCONS:D:04B:UN:2.4c")
	mseg("BGM+7+%s+9", doc)
	mseg("DTM+137:%s?+00:303", docTime)
	mseg("NAD+MS+9900000000003::293")
	mseg("UNS+D")
	mseg("NAD+DP")
	mseg("LOC+172+51234567895")
	mseg("LIN+1")
	mseg("PIA+5+1-1?:1.29.0:SRW")
	loc := cal.Location()
	i := 0
	for t := cal.DayStart(d); t.Before(cal.DayEnd(d)); t = t.Add(15 * time.Minute) {
		stamp := func(t time.Time) string {
			lt := t.In(loc)
			_, off := lt.Zone()
			return fmt.Sprintf("%s?+%02d", lt.Format("200601021504"), off/3600)
		}
		mseg("QTY+220:%s:KWH", value(i))
		mseg("DTM+163:%s:303", stamp(t))
		mseg("DTM+164:%s:303", stamp(t.Add(15*time.Minute)))
		i++
	}
	n++
	seg("UNT+%d+1", n)
	seg("UNZ+1+IC%s", doc)
	return b.String()
}

// TestClockChanges: the days summer time begins and ends hold 92 and 100
// quarter hours, contiguous in UTC, on the Berlin day they belong to.
func TestClockChanges(t *testing.T) {
	cal, _ := metering.NewCalendar()
	for d, n := range map[metering.Date]int{
		{Year: 2026, Month: 3, Day: 29}:  92,
		{Year: 2026, Month: 10, Day: 25}: 100,
		{Year: 2026, Month: 6, Day: 1}:   96,
	} {
		in := day(d, "D1", "202604011200", func(i int) string { return fmt.Sprint(i) })
		ms := read(t, in, opts())
		if ms[0].Err != nil {
			t.Fatalf("%v: %v", d, ms[0].Err)
		}
		rs := ms[0].Readings
		if len(rs) != n {
			t.Fatalf("%v: %d readings, want %d", d, len(rs), n)
		}
		for i, r := range rs {
			if i > 0 && !r.From.Equal(rs[i-1].To) {
				t.Fatalf("%v: reading %d starts at %v, the one before ends at %v", d, i, r.From, rs[i-1].To)
			}
			if cal.LocalDay(r.From) != d {
				t.Fatalf("%v: reading %d at %v is on another day", d, i, r.From)
			}
		}
		if !rs[0].From.Equal(cal.DayStart(d)) || !rs[n-1].To.Equal(cal.DayEnd(d)) {
			t.Errorf("%v: readings from %v to %v", d, rs[0].From, rs[n-1].To)
		}
	}
}

// TestRefusals: every rule's violation refuses the message whole and
// names the segment and the reason.
func TestRefusals(t *testing.T) {
	good := fixture(t, "mapping.edi")
	cases := map[string]struct {
		old, new, want string
		o              Options
	}{
		"unknown qualifier":     {"QTY+187:3", "QTY+Z30:3", `segment 27 (QTY): quantity qualifier "Z30"`, opts()},
		"bad check digit":       {"LOC+172+51234567895", "LOC+172+51234567894", "segment 9 (LOC): market location: metering: invalid MaLo \"51234567894\": check digit mismatch", opts()},
		"MeLo without relation": {"", "", "segment 37 (LOC): metering location DE0001234567890000000000000000001: no market location configured", Options{Table: power}},
		"off the grid":          {"DTM+163:202603292200?+00:303'\nDTM+164:202603292215", "DTM+163:202603292207?+00:303'\nDTM+164:202603292222", "segment 15 (DTM): 2026-03-29T22:07:00Z is not on the PT15M grid", opts()},
		"no resolution":         {"DTM+164:202603292215?+00:303'\nQTY+67", "DTM+164:202603292220?+00:303'\nQTY+67", "segment 16 (DTM): an interval of 20m0s", opts()},
		"resolution of table":   {"DTM+164:202603292215?+00:303'\nQTY+67", "DTM+164:202603292300?+00:303'\nQTY+67", "resolution PT1H is not accepted", opts()},
		"unsupported version":   {"2.4c", "2.4b", "segment 1 (UNH): message MSCONS:D:04B:UN:2.4b is not supported: only MSCONS:D:04B:UN:2.4c and MSCONS:D:04B:UN:2.2e", opts()},
		"cancellation":          {"BGM+7+DOC0001+9", "BGM+7+DOC0001+1", "segment 2 (BGM): a cancellation", opts()},
		"date format":           {"DTM+164:202603300045:203", "DTM+164:20260330:102", `segment 23 (DTM): date format "102"`, opts()},
		"bad offset":            {"202603300015?+02", "202603300015?+2", "segment 18 (DTM): date", opts()},
		"decimal mark":          {"QTY+220:1.5:KWH", "QTY+220:1,5:KWH", "segment 14 (QTY): quantity \"1,5\"", opts()},
		"unit":                  {"QTY+220:1.5:KWH", "QTY+220:1.5:MWH", `measure unit "MWH"`, opts()},
		"no end":                {"DTM+164:202603292215?+00:303'\nQTY+67", "QTY+67", "segment 14 (QTY): the value has no DTM+163 and DTM+164", opts()},
		"no document date":      {"DTM+137:202603301015?+00:303'\n", "", "no document date", opts()},
		"no sender":             {"NAD+MS+9900000000003::293'\n", "", "no sender", opts()},
		"twice":                 {"DTM+163:202603292245?+00:303'\nDTM+164:202603292300", "DTM+163:202603292200?+00:303'\nDTM+164:202603292215", "is given twice", opts()},
		"no OBIS":               {"PIA+5+1-1?:1.29.0:SRW'\n", "", "QTY without an OBIS code", opts()},
		"medium not OBIS":       {"PIA+5+1-1?:1.29.0:SRW", "PIA+5+AUA:Z08", "segment 13 (PIA): product id", opts()},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			in := good
			if c.old != "" {
				if !strings.Contains(in, c.old) {
					t.Fatalf("fixture lacks %q", c.old)
				}
				in = strings.Replace(in, c.old, c.new, 1)
			}
			// The segment count follows the segments removed.
			if d := strings.Count(good, "'") - strings.Count(in, "'"); d != 0 {
				in = strings.Replace(in, "UNT+43", fmt.Sprintf("UNT+%d", 43-d), 1)
			}
			ms := read(t, in, c.o)
			if ms[0].Err == nil {
				t.Fatal("not refused")
			}
			if len(ms[0].Readings) != 0 {
				t.Error("a refused message yielded readings")
			}
			if !strings.Contains(ms[0].Err.Error(), c.want) {
				t.Errorf("got %v\nwant %q", ms[0].Err, c.want)
			}
		})
	}
}

// TestOtherMessagesStay: a bad message beside a good one is refused alone.
func TestOtherMessagesStay(t *testing.T) {
	good := fixture(t, "mapping.edi")
	body := good[strings.Index(good, "UNH"):strings.Index(good, "UNZ")]
	bad := strings.Replace(strings.ReplaceAll(body, "MSG1", "MSG2"), "QTY+79", "QTY+999", 1)
	in := strings.Replace(good, "UNZ+1", "UNZ+2", 1)
	in = strings.Replace(in, "UNZ", bad+"UNZ", 1)
	ms := read(t, in, opts())
	if len(ms) != 2 || ms[0].Err != nil || len(ms[0].Readings) != 8 || ms[1].Err == nil ||
		!strings.Contains(ms[1].Err.Error(), `message 2 "MSG2": segment 30 (QTY)`) {
		t.Fatalf("messages: %+v / %v", ms[0].Err, ms[1].Err)
	}
}

// TestAmbiguous203: a local time the clock repeats cannot be placed.
func TestAmbiguous203(t *testing.T) {
	in := strings.NewReplacer("DTM+163:202603300030:203", "DTM+163:202610250230:203",
		"DTM+164:202603300045:203", "DTM+164:202610250245:203").Replace(fixture(t, "mapping.edi"))
	ms := read(t, in, opts())
	if ms[0].Err == nil || !strings.Contains(ms[0].Err.Error(), "ambiguous") {
		t.Fatalf("got %v", ms[0].Err)
	}
	in = strings.NewReplacer("DTM+163:202603300030:203", "DTM+163:202603290230:203").Replace(fixture(t, "mapping.edi"))
	if ms := read(t, in, opts()); ms[0].Err == nil || !strings.Contains(ms[0].Err.Error(), "does not exist") {
		t.Fatalf("got %v", ms[0].Err)
	}
}

func dec(s string) series.Decimal {
	d, err := series.ParseDecimal(s)
	if err != nil {
		panic(err)
	}
	return d
}

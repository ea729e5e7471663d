package mscons

import (
	"os"
	"strings"
	"testing"

	"github.com/meterstore/meterstore/internal/edifact"
	"github.com/meterstore/meterstore/metering"
)

// FuzzRead: no interchange panics the reader, and every refused message
// names a segment of it.
func FuzzRead(f *testing.F) {
	good, err := os.ReadFile("testdata/mapping.edi")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(day(metering.Date{Year: 2026, Month: 10, Day: 25}, "D", "202610261200", func(int) string { return "1" })))
	for _, r := range [][2]string{
		{"QTY+187", "QTY+Z30"}, {"51234567895", "51234567894"}, {"2.4c", "2.2e"}, {"?+02", "?+2"},
		{"DTM+164:202603292215?+00:303'\nQTY+67", "QTY+67"}, {"202603300030:203", "202610250230:203"},
		{"?+00:303", ":303"}, {"QTY+220:1.5", "QTY+220:1e5"}, {"UNT+43", "UNT+44"},
	} {
		f.Add([]byte(strings.Replace(string(good), r[0], r[1], 1)))
	}
	cal, err := metering.NewCalendar()
	if err != nil {
		f.Fatal(err)
	}
	o := opts()
	o.Calendar = cal
	f.Fuzz(func(t *testing.T, data []byte) {
		ic, err := edifact.Parse(data)
		if err != nil {
			return
		}
		ms, err := Read(ic, o)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range ms {
			if m.Err == nil {
				if len(m.Readings) == 0 || len(m.Readings) != len(m.Segments) {
					t.Fatalf("message %d: %d readings, %d segments", i, len(m.Readings), len(m.Segments))
				}
				continue
			}
			if m.Err.Segment < 1 || m.Err.Segment > len(ic.Messages[i].Segments)+1 || len(m.Readings) != 0 {
				t.Fatalf("message %d: refusal %v of %d segments", i, m.Err, len(ic.Messages[i].Segments))
			}
		}
	})
}

package hotbench

import (
	"bytes"
	"io"
	"testing"

	"github.com/meterstore/meterstore/internal/edifact"
	"github.com/meterstore/meterstore/internal/ingest"
	"github.com/meterstore/meterstore/internal/mscons"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// TestEncode decodes both encodings of batches with corrections and
// substitute values as `meterstore ingest` does and wants back every
// field the fixture sets, in order.
func TestEncode(t *testing.T) {
	cal, err := metering.NewCalendar()
	if err != nil {
		t.Fatal(err)
	}
	f := DefaultFixture()
	f.Meters, f.MetersPerBatch, f.CorrectionRate = 40, 20, 0.25
	gen, err := f.Start(cal)
	if err != nil {
		t.Fatal(err)
	}
	tab := &series.Table{Name: "t", TimeModel: series.Interval, Commodity: metering.Electricity,
		Resolutions: []metering.Resolution{metering.QuarterHour}, Width: series.Daily}
	qualities := map[metering.Quality]int{}
	for b := gen.Next(); b != nil; b = gen.Next() {
		for _, r := range b {
			qualities[r.Quality]++
		}
		edi, err := EncodeMSCONS(b, "T")
		if err != nil {
			t.Fatal(err)
		}
		ic, err := edifact.Parse(edi)
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := mscons.Read(ic, mscons.Options{Table: tab, Calendar: cal})
		if err != nil {
			t.Fatal(err)
		}
		var fromMSCONS []series.Reading
		for _, m := range msgs {
			if m.Err != nil {
				t.Fatalf("message %d: %v", m.Number, m.Err)
			}
			fromMSCONS = append(fromMSCONS, m.Readings...)
		}
		if len(msgs) != len(b)/96 {
			t.Fatalf("%d messages for %d meter-days", len(msgs), len(b)/96)
		}
		d, err := ingest.NewDecoder(bytes.NewReader(EncodeCSV(nil, b)), ingest.CSV, tab)
		if err != nil {
			t.Fatal(err)
		}
		var fromCSV []series.Reading
		for {
			rec, err := d.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			fromCSV = append(fromCSV, rec.Reading)
		}
		for name, got := range map[string][]series.Reading{"MSCONS": fromMSCONS, "CSV": fromCSV} {
			if len(got) != len(b) {
				t.Fatalf("%s: %d readings of %d", name, len(got), len(b))
			}
			for i := range b {
				w, g := b[i], got[i]
				if g.MaLo != w.MaLo || g.OBIS != w.OBIS || !g.From.Equal(w.From) || !g.To.Equal(w.To) || g.Value != w.Value ||
					g.Unit != w.Unit || g.Quality != w.Quality || g.Resolution != w.Resolution || g.Version != w.Version || g.VersionScope != w.VersionScope {
					t.Fatalf("%s reading %d:\n got %+v\nwant %+v", name, i, g, w)
				}
			}
		}
	}
	if qualities[metering.TrueValue] == 0 || qualities[metering.Substitute] == 0 {
		t.Fatalf("qualities %v: want true and substitute values", qualities)
	}
}

func TestEscape(t *testing.T) {
	if got := escape("1-1:1.29.0+a?b'c"); got != "1-1?:1.29.0?+a??b?'c" {
		t.Fatal(got)
	}
}

package ingest

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/internal/edifact"
	"github.com/meterstore/meterstore/internal/mscons"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// sameReadings returns one day of quarter hours of meters market
// locations as an MSCONS interchange (a message per location) and as CSV.
func sameReadings(meters int) (edi, csv string) {
	var e, c strings.Builder
	c.WriteString("malo_id,obis_code,from,to,value,unit,quality,resolution,version,version_scope\n")
	e.WriteString("UNA:+.? 'UNB+UNOC:3+9900000000003:500+9900000000010:500+260302:0000+IC++TL'")
	start := time.Date(2026, 3, 1, 23, 0, 0, 0, time.UTC)
	for m := range meters {
		id, _ := metering.MaLoFromPrefix(fmt.Sprintf("%010d", 2_000_000_000+m))
		segs := []string{fmt.Sprintf("UNH+%d+MSCONS:D:04B:UN:2.4c", m), "BGM+7+D+9", "DTM+137:202603020000?+00:303",
			"NAD+MS+9900000000003::293", "UNS+D", "NAD+DP", "LOC+172+" + id.String(), "LIN+1", "PIA+5+1-1?:1.29.0:SRW"}
		for q := range 96 {
			from := start.Add(time.Duration(q) * 15 * time.Minute)
			to := from.Add(15 * time.Minute)
			segs = append(segs, fmt.Sprintf("QTY+220:%d.%03d:KWH", q%7, q), "DTM+163:"+from.Format("200601021504")+"?+00:303",
				"DTM+164:"+to.Format("200601021504")+"?+00:303")
			fmt.Fprintf(&c, "%s,1-1:1.29.0,%s,%s,%d.%03d,kWh,220,PT15M,20260302000000,9900000000003:2026-03\n",
				id, from.Format(time.RFC3339), to.Format(time.RFC3339), q%7, q)
		}
		segs = append(segs, fmt.Sprintf("UNT+%d+%d", len(segs)+1, m))
		e.WriteString(strings.Join(segs, "'") + "'")
	}
	fmt.Fprintf(&e, "UNZ+%d+IC'", meters)
	return e.String(), c.String()
}

// BenchmarkDecode compares decoding the same readings from MSCONS and
// from CSV, without writing them.
func BenchmarkDecode(b *testing.B) {
	edi, csv := sameReadings(200)
	const n = 200 * 96
	b.Run("mscons", func(b *testing.B) {
		for b.Loop() {
			ic, err := edifact.Parse([]byte(edi))
			if err != nil {
				b.Fatal(err)
			}
			ms, err := mscons.Read(ic, mscons.Options{Table: msconsTable})
			if err != nil || ms[0].Err != nil || len(ms) != 200 {
				b.Fatal(err, ms[0].Err)
			}
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "readings/s")
	})
	b.Run("csv", func(b *testing.B) {
		for b.Loop() {
			d, err := NewDecoder(strings.NewReader(csv), CSV, msconsTable)
			if err != nil {
				b.Fatal(err)
			}
			k := 0
			for {
				_, err := d.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				k++
			}
			if k != n {
				b.Fatal(k)
			}
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "readings/s")
	})
}

// BenchmarkRunCSV decodes a delivery of one batch, as a bench serve
// request carries (100 meter-days), through Run with a write that keeps
// nothing: the decoding serve's ingest adds to Write, requests one after
// another.
func BenchmarkRunCSV(b *testing.B) {
	_, csv := sameReadings(100)
	const n = 100 * 96
	write := func(_ context.Context, rows []series.Reading) ([]series.Status, int, error) {
		return make([]series.Status, len(rows)), 0, nil
	}
	b.ReportAllocs()
	for b.Loop() {
		d, err := NewDecoder(strings.NewReader(csv), CSV, msconsTable)
		if err != nil {
			b.Fatal(err)
		}
		sum, err := Run(b.Context(), d, write, Options{})
		if err != nil || sum.Records != n {
			b.Fatal(sum, err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "readings/s")
}

package hot

import (
	"fmt"
	"testing"
	"time"

	"github.com/meterstore/meterstore/series"
)

// BenchmarkScanDays measures the day sums of 200 meters' quarter hours on
// two channels for three days, with corrections, in both dictionary
// layouts: PostgreSQL's GROUP BY, on_grid included, per reading.
func BenchmarkScanDays(b *testing.B) {
	for _, lay := range dictLayouts {
		b.Run(lay.String(), func(b *testing.B) {
			h, _ := newTier(b, Options{})
			h.statementLayout = lay
			tab := lastgang("bench")
			tab.Integrity = series.IntegrityStatement
			tab.Columns = []series.Column{{Name: "channel", Identity: true, Values: []string{"A", "B"}}}
			if err := h.Ensure(b.Context(), tab); err != nil {
				b.Fatal(err)
			}
			if _, err := h.CreatePartitions(b.Context(), tab, day, day.AddDate(0, 0, 2)); err != nil {
				b.Fatal(err)
			}
			const meters, days = 200, 3
			var rows []series.Reading
			for d := range days {
				for i := range meters {
					for _, ch := range []string{"A", "B"} {
						for n, r := range meterDay(i, 10) {
							r.From, r.To = r.From.AddDate(0, 0, d), r.To.AddDate(0, 0, d)
							r.Extra = map[string]string{"channel": ch}
							rows = append(rows, r)
							if n%7 == 0 {
								r.Version, r.Value = 11, r.Value+1
								rows = append(rows, r)
							}
						}
					}
				}
				mustWrite(b, h, tab, rows)
				rows = rows[:0]
			}
			s, r, err := h.OpenSnapshotRead(b.Context(), 2, tab, series.Range{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			cols := make([]int, len(r.DayColumns()))
			for i := range cols {
				cols[i] = i
			}
			readings := 0
			for b.Loop() {
				readings = 0
				for u := range r.Units(0) {
					c, err := r.ScanDays(b.Context(), u, time.Time{}, cols)
					if err != nil {
						b.Fatal(err)
					}
					n := 0
					for c.Next(b.Context()) {
						n++
					}
					if err := c.Err(); err != nil {
						b.Fatal(err)
					}
					c.Close()
					readings += n
				}
			}
			// A day row a series, day and partition.
			if readings < meters*2*days || readings > 2*meters*2*(days+1) {
				b.Fatal(fmt.Sprintf("%d day rows for %d series-days", readings, meters*2*days))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*meters*2*days*96), "ns/reading")
		})
	}
}

package rollup

import (
	"fmt"
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// BenchmarkStream sums a day (UTC: two Berlin days) of 5000 meters' quarter hours, as an
// archival of BenchmarkDailyRollupArchive's fixture passes them.
func BenchmarkStream(b *testing.B) {
	cal, err := metering.NewCalendar()
	if err != nil {
		b.Fatal(err)
	}
	decl := &series.Table{Name: "power", TimeModel: series.Interval, Commodity: metering.Electricity,
		Columns: []series.Column{{Name: "channel", Identity: true}}}
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var rs []series.Reading
	for i := range 5000 {
		for k := range 96 {
			from := day.Add(time.Duration(k) * 15 * time.Minute)
			rs = append(rs, series.Reading{MaLo: fmt.Sprintf("5%010d", i), OBIS: "1-1:1.29.0", From: from, To: from.Add(15 * time.Minute),
				Value: series.Decimal(k), Unit: metering.KilowattHour, Quality: metering.TrueValue, Resolution: metering.QuarterHour,
				Version: uint64(k % 7), Extra: map[string]string{"channel": "A"}, RecordedAt: day, BalancingDay: cal.BalancingDay(from, metering.Electricity)})
		}
	}
	for b.Loop() {
		s := NewStream(decl, cal)
		for i := range rs {
			s.AddNext(&rs[i], false, i > 0 && i%96 != 0)
		}
		if n := len(s.Rows(1)); n != 10000 {
			b.Fatal(n)
		}
	}
}

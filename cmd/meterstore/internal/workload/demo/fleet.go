package demo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/workload/hotbench"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// fleet generates the demo's deliveries day by day: quarter-hour power load
// profiles (the hot tier's benchmark generator, one fixture per day) and
// daily gas values per gas day.
type fleet struct {
	cal    *metering.Calendar
	meters int
	seed   uint64
}

// powerDay returns the batches of one Berlin day of power readings, 3% of
// the meter-days delivered again as corrections.
func (f fleet) powerDay(d metering.Date) ([][]series.Reading, error) {
	g, err := hotbench.Fixture{Day: d, Meters: f.meters, CorrectionRate: 0.03, MetersPerBatch: 200,
		Seed: f.seed ^ uint64(d.Year*10000+int(d.Month)*100+d.Day)}.Start(f.cal)
	if err != nil {
		return nil, err
	}
	var out [][]series.Reading
	for b := g.Next(); b != nil; b = g.Next() {
		out = append(out, b)
	}
	return out, nil
}

// gasOperator is the network operator of the demo's gas meters.
const gasOperator = "9870000000005"

// gasDay returns one daily value per gas meter for gas day d (06:00 to
// 06:00 Berlin time, 23 or 25 hours around a clock change), delivered
// under version, with a winter-heavy consumption curve.
func (f fleet) gasDay(d metering.Date, version uint64, scale float64) ([]series.Reading, error) {
	from := f.cal.GasDayStart(d)
	to := f.cal.GasDayEnd(d)
	day := float64(from.YearDay())
	season := 1 + 0.8*math.Cos(2*math.Pi*(day-15)/365) // coldest mid-January
	scope := fmt.Sprintf("%s:%04d-%02d", gasOperator, d.Year, d.Month)
	var out []series.Reading
	for m := range f.meters / 4 {
		ml, err := metering.MaLoFromPrefix(fmt.Sprintf("7%09d", m))
		if err != nil {
			return nil, err
		}
		r := rand.New(rand.NewPCG(f.seed, uint64(m)<<20|uint64(day)))
		kwh := scale * (20 + 60*r.Float64()) * season * to.Sub(from).Hours() / 24
		out = append(out, series.Reading{
			MaLo: ml.String(), OBIS: "7-20:99.33.17", Commodity: metering.Gas,
			From: from, To: to, Value: series.Decimal(math.Round(kwh*1000) * 1000),
			Unit: metering.KilowattHour, Quality: metering.TrueValue, Resolution: metering.Day,
			Version: version, VersionScope: scope,
		})
	}
	return out, nil
}

// stamp is an MSCONS-style version: the delivery time as YYYYMMDDhhmmss.
func stamp(t time.Time, loc *time.Location) uint64 {
	var v uint64
	fmt.Sscan(t.In(loc).Format("20060102150405"), &v)
	return v
}

// Package hotbench measures how fast readings go into the hot tier: a
// generator of realistic load-profile deliveries, and a runner that writes
// them through the hot tier and, for comparison, with raw COPY into a plain
// table with the same columns, on the same server in one run; or, encoded
// as CSV and as MSCONS deliveries, through the decoders of `meterstore
// ingest`.
package hotbench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// A Fixture describes one day of quarter-hour load profiles of many meters,
// delivered in batches, a share of them delivered again as corrections.
type Fixture struct {
	Day    metering.Date // the Berlin day delivered
	Meters int           // meters, one meter-day each
	// CorrectionRate is the share of meter-days delivered a second time
	// under a higher version, some values re-measured, substitute values
	// replaced by true ones.
	CorrectionRate float64
	// MetersPerBatch is the number of meter-days per batch, corrections
	// included; a batch holds 96 times as many readings on an ordinary day.
	MetersPerBatch int
	Seed           uint64
}

// DefaultFixture is 10,000 meters of one ordinary day, 3% corrected, in
// batches of 100 meter-days (9,600 readings).
func DefaultFixture() Fixture {
	return Fixture{
		Day:            metering.Date{Year: 2026, Month: time.March, Day: 4},
		Meters:         10_000,
		CorrectionRate: 0.03,
		MetersPerBatch: 100,
		Seed:           1,
	}
}

// operators are the network operators of the fixture, by BDEW code.
var operators = []string{"9900000000003", "9900000000010", "9900000000027", "9900000000034"}

// A Generator produces the batches of a fixture in order.
type Generator struct {
	f         Fixture
	cal       *metering.Calendar
	rng       *rand.Rand
	slots     []time.Time
	month     string
	next      int   // next meter to deliver for the first time
	delivered []int // meters delivered once, candidates for a correction
	corrected int
	wantCorr  int
	version   uint64 // version of first deliveries
	corrVer   uint64 // version of corrections
}

// Start returns a generator of f's batches.
func (f Fixture) Start(cal *metering.Calendar) (*Generator, error) {
	if f.Meters <= 0 || f.MetersPerBatch <= 0 || f.CorrectionRate < 0 || f.CorrectionRate >= 1 || !f.Day.IsValid() {
		return nil, fmt.Errorf("hotbench: invalid fixture %+v", f)
	}
	n, err := cal.IntervalsPerDay(f.Day, metering.QuarterHour, metering.Electricity)
	if err != nil {
		return nil, err
	}
	g := &Generator{
		f:        f,
		cal:      cal,
		rng:      rand.New(rand.NewPCG(f.Seed, f.Seed^0x9e3779b97f4a7c15)),
		month:    fmt.Sprintf("%04d-%02d", f.Day.Year, f.Day.Month),
		wantCorr: int(math.Round(float64(f.Meters) * f.CorrectionRate)),
	}
	t := cal.DayStart(f.Day)
	for range n {
		g.slots = append(g.slots, t)
		t = t.Add(15 * time.Minute)
	}
	// MSCONS versions are delivery timestamps: the morning after, and a
	// week later for the corrections.
	g.version = stamp(cal.DayStart(f.Day.AddDays(1)).Add(6*time.Hour), cal)
	g.corrVer = stamp(cal.DayStart(f.Day.AddDays(8)).Add(10*time.Hour), cal)
	return g, nil
}

func stamp(t time.Time, cal *metering.Calendar) uint64 {
	var v uint64
	fmt.Sscan(t.In(cal.Location()).Format("20060102150405"), &v)
	return v
}

// Rows returns the number of readings the fixture delivers in all.
func (g *Generator) Rows() int { return (g.f.Meters + g.wantCorr) * len(g.slots) }

// Span returns the interval the fixture's readings cover.
func (g *Generator) Span() (from, to time.Time) {
	return g.slots[0], g.slots[len(g.slots)-1].Add(15 * time.Minute)
}

// Next returns the next batch, or nil when the fixture is exhausted. A batch
// holds corrections in proportion, of meters delivered in earlier batches.
func (g *Generator) Next() []series.Reading {
	var batch []series.Reading
	for m := 0; m < g.f.MetersPerBatch; m++ {
		// Corrections keep pace with first deliveries, so they spread over
		// the run rather than arriving at its end.
		due := g.corrected < g.wantCorr && len(g.delivered) > 0 &&
			(g.next >= g.f.Meters || float64(g.corrected) < float64(g.next)*g.f.CorrectionRate)
		switch {
		case due:
			i := g.rng.IntN(len(g.delivered))
			meter := g.delivered[i]
			g.delivered[i] = g.delivered[len(g.delivered)-1]
			g.delivered = g.delivered[:len(g.delivered)-1]
			batch = g.meterDay(batch, meter, true)
			g.corrected++
		case g.next < g.f.Meters:
			batch = g.meterDay(batch, g.next, false)
			g.delivered = append(g.delivered, g.next)
			g.next++
		}
	}
	return batch
}

// meterDay appends the readings of one meter-day. Values follow a household
// load shape: low at night, a morning and a larger evening peak, more at
// weekends, scaled by the meter's annual consumption, with noise; they have
// three decimal places (Wh). A correction re-measures about a tenth of the
// values and replaces the substitute values of the first delivery.
func (g *Generator) meterDay(batch []series.Reading, meter int, correction bool) []series.Reading {
	ml, err := metering.MaLoFromPrefix(fmt.Sprintf("5%09d", meter))
	if err != nil {
		panic(err) // the prefix is ten digits by construction
	}
	// The same per-meter stream for the first delivery and a correction.
	r := rand.New(rand.NewPCG(g.f.Seed, uint64(meter)))
	annual := 1500 + 4500*r.Float64() // kWh a year
	mean := annual / 35040            // kWh a quarter hour
	weekday := g.f.Day.Weekday()
	week := 1.0
	if weekday == time.Saturday || weekday == time.Sunday {
		week = 1.15
	}
	version := g.version
	if correction {
		version = g.corrVer
	}
	scope := operators[meter%len(operators)] + ":" + g.month
	for _, from := range g.slots {
		local := from.In(g.cal.Location())
		h := float64(local.Hour()) + float64(local.Minute())/60
		shape := 0.45 + 0.55*bump(h, 7.5, 1.5) + 0.35*bump(h, 12.5, 2) + 1.1*bump(h, 19, 2.2)
		kwh := mean * shape * week * math.Max(0.05, 1+0.25*r.NormFloat64())
		quality := metering.TrueValue
		if r.Float64() < 0.02 {
			quality = metering.Substitute
		}
		remeasured := r.Float64() < 0.1
		if correction && (remeasured || quality == metering.Substitute) {
			kwh *= 0.95 + 0.1*g.rng.Float64()
			quality = metering.TrueValue
		}
		batch = append(batch, series.Reading{
			MaLo:         ml.String(),
			OBIS:         "1-1:1.29.0",
			Commodity:    metering.Electricity,
			From:         from,
			To:           from.Add(15 * time.Minute),
			Value:        series.Decimal(math.Round(kwh*1000)) * 1000,
			Unit:         metering.KilowattHour,
			Quality:      quality,
			Resolution:   metering.QuarterHour,
			Version:      version,
			VersionScope: scope,
		})
	}
	return batch
}

// bump is a bell curve of height 1 around center.
func bump(x, center, width float64) float64 {
	d := (x - center) / width
	return math.Exp(-d * d)
}

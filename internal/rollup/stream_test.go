package rollup

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// TestStreamEqualsCompute feeds a Stream readings as an archival does
// (partition by partition, each in primary key order, the identity
// column after from, so a series' days interleave with its other
// channel's) and with a day's part given as rows summed before, and
// wants exactly Compute's rows of them all.
func TestStreamEqualsCompute(t *testing.T) {
	cal, err := metering.NewCalendar()
	if err != nil {
		t.Fatal(err)
	}
	decl := &series.Table{Name: "power", TimeModel: series.Interval, Commodity: metering.Electricity,
		Columns: []series.Column{{Name: "channel", Identity: true}}}
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rs := streamFixture(rand.New(rand.NewPCG(seed, 50)), cal)
			want := Compute(decl, cal, rs, 7)

			s := NewStream(decl, cal)
			for i := range rs {
				same, sameSeries := false, false
				if i > 0 {
					p, r := &rs[i-1], &rs[i]
					sameSeries = p.MaLo == r.MaLo && p.OBIS == r.OBIS && p.Extra["channel"] == r.Extra["channel"]
					same = sameSeries && p.From.Equal(r.From)
				}
				s.AddNext(&rs[i], same, sameSeries)
			}
			if got := s.Rows(7); !reflect.DeepEqual(got, want) {
				t.Fatalf("AddNext: %d rows, want %d; first difference: %s", len(got), len(want), difference(got, want))
			}

			// The readings of the first day, summed before, added as rows
			// after the rest, as a catch-up adds what the last one carried.
			first := cal.BalancingDay(rs[0].From, metering.Electricity)
			var before, after []series.Reading
			for _, r := range rs {
				if r.BalancingDay == first {
					before = append(before, r)
				} else {
					after = append(after, r)
				}
			}
			s = NewStream(decl, cal)
			for i := range after {
				s.Add(&after[i])
			}
			s.AddRows(Compute(decl, cal, before, 0))
			if got := s.Rows(7); !reflect.DeepEqual(got, want) {
				t.Fatalf("Add and AddRows: %d rows, want %d; first difference: %s", len(got), len(want), difference(got, want))
			}
		})
	}
}

// streamFixture returns readings of a few meters over the days around
// the change to summer time, some of them restated, a few off the grid,
// of channels A and B, in an archival's order: by UTC day (the
// partition), then market location, OBIS code, from, channel, version.
func streamFixture(rng *rand.Rand, cal *metering.Calendar) []series.Reading {
	start := time.Date(2026, 3, 28, 0, 0, 0, 0, time.UTC)
	var rs []series.Reading
	for m := range 1 + rng.IntN(4) {
		for _, obis := range []string{"1-1:1.29.0", "1-1:2.29.0"}[:1+rng.IntN(2)] {
			channels := []string{"A", "B"}[:1+rng.IntN(2)]
			for k := range 3 * 96 {
				if rng.IntN(10) == 0 {
					continue // a gap
				}
				from := start.Add(time.Duration(k) * 15 * time.Minute)
				if rng.IntN(50) == 0 {
					from = from.Add(5 * time.Minute) // off the grid
				}
				for _, ch := range channels {
					for v := range 1 + rng.IntN(3) {
						rs = append(rs, series.Reading{MaLo: fmt.Sprintf("5%010d", m), OBIS: obis, From: from, To: from.Add(15 * time.Minute),
							Value: series.Decimal(rng.Int64N(1_000_000_000)), Unit: metering.KilowattHour,
							Quality: metering.Qualities()[rng.IntN(len(metering.Qualities()))], Resolution: metering.QuarterHour,
							Version: uint64(v + 1), Extra: map[string]string{"channel": ch},
							RecordedAt:   start.Add(time.Duration(rng.IntN(1000)) * time.Second),
							BalancingDay: cal.BalancingDay(from, metering.Electricity)})
					}
				}
			}
		}
	}
	slices.SortStableFunc(rs, func(a, b series.Reading) int {
		return cmp.Or(a.From.Truncate(24*time.Hour).Compare(b.From.Truncate(24*time.Hour)),
			cmp.Compare(a.MaLo, b.MaLo), cmp.Compare(a.OBIS, b.OBIS), a.From.Compare(b.From),
			cmp.Compare(a.Extra["channel"], b.Extra["channel"]), cmp.Compare(a.Version, b.Version))
	})
	return rs
}

// difference describes the first row where got and want differ.
func difference(got, want []Row) string {
	for i := range min(len(got), len(want)) {
		if !reflect.DeepEqual(got[i], want[i]) {
			return fmt.Sprintf("row %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	return "one is a prefix of the other"
}

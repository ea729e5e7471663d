package query

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// completenessLines is the SELECT of the relation completeness whose rows
// the oracle's completeness renders; a WHERE on balancing_day follows.
const completenessLines = `SELECT malo_id, obis_code, channel, sparte, resolution, CAST(balancing_day AS VARCHAR),
	epoch_us("from"), epoch_us("to"), expected, present, missing, surplus FROM completeness`

// An oracleSeries names a series of the fixtures: the table's identity
// column is channel.
type oracleSeries struct{ malo, obis, channel string }

// An oracleKind is what a series' intervals of a day are expected to be.
type oracleKind struct {
	res metering.Resolution
	com metering.Commodity
}

// step orders kinds from the finest resolution; a day counts as 24 hours.
func (k oracleKind) step() time.Duration {
	if s, ok := k.res.Fixed(); ok {
		return s
	}
	return 24 * time.Hour
}

// resolved returns, per merge key, the reading that wins among those
// recorded at or before known (zero: everything): the highest version,
// then the latest recorded_at.
func (o *resolutionOracle) resolved(known time.Time) []series.Reading {
	type key struct {
		malo, obis, channel string
		from                int64
	}
	best := map[key]series.Reading{}
	for _, r := range o.visible(known) {
		k := key{r.MaLo, r.OBIS, r.Extra["channel"], r.From.UnixMicro()}
		b, ok := best[k]
		if !ok || r.Version > b.Version || (r.Version == b.Version && r.RecordedAt.After(b.RecordedAt)) {
			best[k] = r
		}
	}
	out := make([]series.Reading, 0, len(best))
	for _, r := range best {
		out = append(out, r)
	}
	return out
}

// visible returns every version recorded at or before known (zero:
// everything).
func (o *resolutionOracle) visible(known time.Time) []series.Reading {
	var out []series.Reading
	for _, r := range o.rows {
		if known.IsZero() || !r.RecordedAt.After(known) {
			out = append(out, r)
		}
	}
	return out
}

// completeness returns the lines the relation completeness must show for
// the balancing days lo to hi of table tab, of what was recorded at or
// before known (zero: everything), computed from the definition in
// completeness.go with the calendar of the metering package: per series
// and day, the winning readings of the kind most of them have, on its
// grid within the day (present) or not (surplus), against what the
// calendar expects; a series is expected from lo if any version of it
// was delivered in the lookback, else from its first day in the range.
func (o *resolutionOracle) completeness(tab *series.Table, lo, hi metering.Date, known time.Time) ([]string, error) {
	kindOf := func(r series.Reading) oracleKind {
		k := oracleKind{r.Resolution, r.Commodity}
		if k.com == 0 {
			k.com = tab.Commodity
		}
		return k
	}
	// Resolutions coarser than a day are not counted: the calendar
	// refuses to count them in a day.
	counted := func(r series.Reading) bool {
		_, err := cal.IntervalsPerDay(r.BalancingDay, r.Resolution, kindOf(r).com)
		return err == nil
	}
	within := func(d, a, b metering.Date) bool { return d.Compare(a) >= 0 && d.Compare(b) <= 0 }

	type tally struct{ n, good int }
	days := map[oracleSeries]map[metering.Date]map[oracleKind]*tally{}
	for _, r := range o.resolved(known) {
		if !counted(r) || !within(r.BalancingDay, lo, hi) {
			continue
		}
		s, k, d := oracleSeries{r.MaLo, r.OBIS, r.Extra["channel"]}, kindOf(r), r.BalancingDay
		start, end := cal.BalancingDayStart(d, k.com), cal.BalancingDayEnd(d, k.com)
		onGrid := r.From.Equal(start)
		if step, ok := k.res.Fixed(); ok {
			onGrid = r.From.Sub(start)%step == 0
		}
		if days[s] == nil {
			days[s] = map[metering.Date]map[oracleKind]*tally{}
		}
		if days[s][d] == nil {
			days[s][d] = map[oracleKind]*tally{}
		}
		t := days[s][d][k]
		if t == nil {
			t = &tally{}
			days[s][d][k] = t
		}
		t.n++
		if !r.From.Before(start) && r.From.Before(end) && onGrid {
			t.good++
		}
	}

	// Seen before: any version in the lookback, with the kind of its
	// latest interval there.
	seen := map[oracleSeries]series.Reading{}
	for _, r := range o.visible(known) {
		if !counted(r) || !within(r.BalancingDay, lo.AddDays(-CompletenessLookback), lo.AddDays(-1)) {
			continue
		}
		s := oracleSeries{r.MaLo, r.OBIS, r.Extra["channel"]}
		if b, ok := seen[s]; !ok || r.From.After(b.From) {
			seen[s] = r
		}
	}

	var all []oracleSeries
	for s := range days {
		all = append(all, s)
	}
	for s := range seen {
		if days[s] == nil {
			all = append(all, s)
		}
	}
	var out []string
	for _, s := range all {
		first := lo
		last, ok := oracleKind{}, false
		if r, seenBefore := seen[s]; seenBefore {
			last, ok = kindOf(r), true
		} else {
			first = hi
			for d := range days[s] {
				if d.Compare(first) < 0 {
					first = d
				}
			}
		}
		for d := first; d.Compare(hi) <= 0; d = d.AddDays(1) {
			present, surplus := 0, 0
			if kinds := days[s][d]; len(kinds) > 0 {
				var best oracleKind
				total := 0
				for k, t := range kinds {
					total += t.n
					b := kinds[best]
					if b == nil || cmp.Or(-cmp.Compare(t.good, b.good), -cmp.Compare(t.n, b.n),
						cmp.Compare(k.step(), best.step()), cmp.Compare(k.com.String(), best.com.String())) < 0 {
						best = k
					}
				}
				last, ok = best, true
				present, surplus = kinds[best].good, total-kinds[best].good
			}
			if !ok {
				return nil, fmt.Errorf("oracle: series %v has no kind on %v", s, d)
			}
			expected, err := cal.IntervalsPerDay(d, last.res, last.com)
			if err != nil {
				return nil, err
			}
			from, to := cal.BalancingDayStart(d, last.com), cal.BalancingDayEnd(d, last.com)
			out = append(out, fmt.Sprintf("%s|%s|%s|%s|%s|%s|%d|%d|%d|%d|%d|%d", s.malo, s.obis, s.channel, last.com, last.res,
				d, from.UnixMicro(), to.UnixMicro(), expected, present, expected-present, surplus))
		}
	}
	slices.Sort(out)
	return out, nil
}

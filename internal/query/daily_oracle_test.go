package query

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/rollup"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// daily returns the lines the relation daily must show, as dailyLines
// selects them, for the balancing days lo to hi of table tab, of what was
// recorded at or before known (zero: everything): the winning readings
// grouped by series, day, sparte, resolution and unit.
func (o *resolutionOracle) daily(tab *series.Table, lo, hi metering.Date, known time.Time) ([]string, error) {
	type group struct {
		malo, obis, channel string
		day                 metering.Date
		com                 metering.Commodity
		res                 metering.Resolution
		unit                metering.Unit
	}
	type tally struct {
		n, sum    int64
		qualities map[metering.Quality]int64
		version   uint64
		recorded  time.Time
	}
	groups := map[group]*tally{}
	for _, r := range o.resolved(known) {
		if r.BalancingDay.Compare(lo) < 0 || r.BalancingDay.Compare(hi) > 0 {
			continue
		}
		com := r.Commodity
		if com == 0 {
			com = tab.Commodity
		}
		g := group{r.MaLo, r.OBIS, r.Extra["channel"], r.BalancingDay, com, r.Resolution, r.Unit}
		x := groups[g]
		if x == nil {
			x = &tally{qualities: map[metering.Quality]int64{}}
			groups[g] = x
		}
		x.n++
		x.sum += int64(r.Value)
		x.qualities[r.Quality]++
		x.version = max(x.version, r.Version)
		if r.RecordedAt.After(x.recorded) {
			x.recorded = r.RecordedAt
		}
	}
	var out []string
	for g, x := range groups {
		expected, err := cal.IntervalsPerDay(g.day, g.res, g.com)
		if err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("%s|%s|%s|%s|%s|%s|%s|%d|%d|%s|%d|%d|%d|%d|%d", g.malo, g.obis, g.channel, g.day, g.com, g.res, g.unit,
			expected, x.n, series.Decimal(x.sum), x.qualities[metering.TrueValue], x.qualities[metering.Substitute], x.qualities[metering.Proposed],
			x.version, x.recorded.UnixMicro()))
	}
	slices.Sort(out)
	return out, nil
}

// dailyLines is the SELECT of daily whose rows the oracle's daily renders,
// with channel the identity column of tables that have one.
func dailyLines(channel string) string {
	return `SELECT malo_id, obis_code, ` + channel + `, CAST(balancing_day AS VARCHAR), sparte, resolution, unit, expected, present,
	CAST(value_sum AS VARCHAR), quality_220, quality_67, quality_201, CAST(max_version AS VARCHAR), epoch_us(max_recorded_at) FROM daily`
}

// A dailyFixture is a table archived up to W, with late corrections
// below W and corrections above it, and the ways to read it.
type dailyFixture struct {
	tab     *series.Table
	s       *icebergSource
	o       *resolutionOracle
	channel string // the SQL of the identity column: channel or ''
	modes   []dailyMode
}

// A dailyMode is a way of reading the fixture, and the recorded_at
// ceiling that gives the oracle's answer for it.
type dailyMode struct {
	name  string
	opts  ReadOptions
	known time.Time
}

// newDailyFixture writes days' readings of three locations, made by
// intervals, each in 1 to 3 versions of random value and quality, with
// about one interval in ten missing; archives those before w, keeps the
// rest in the hot tier; then stores three batches of corrections, recorded
// apart: late ones below W (versions that win, versions that lose to the
// archived winner, and a new interval) and ones above it.
func newDailyFixture(t *testing.T, tab *series.Table, channel string, days []metering.Date, w time.Time,
	intervals func(i int, d metering.Date) []series.Reading) *dailyFixture {
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(50, uint64(time.Now().UnixNano())))
	f := &dailyFixture{tab: tab, s: newIcebergSource(t, tab), o: &resolutionOracle{}, channel: channel}
	base := time.Now().Add(-time.Hour).UTC().Truncate(time.Microsecond)
	qualities := []metering.Quality{metering.TrueValue, metering.Substitute, metering.Proposed}
	var below, above, missing []series.Reading
	for i := range 3 {
		for _, d := range days {
			for _, r := range intervals(i, d) {
				if rng.IntN(10) == 0 {
					missing = append(missing, r)
					continue
				}
				for v := range rng.IntN(3) + 1 {
					r.Version = uint64(10 + 10*v)
					r.RecordedAt = base.Add(time.Duration(v) * time.Second)
					r.Value = series.Decimal(rng.Int64N(1_000_000_000))
					r.Quality = qualities[rng.IntN(len(qualities))]
					if r.From.Before(w) {
						below = append(below, r)
					} else {
						above = append(above, r)
					}
				}
			}
		}
	}
	if _, err := f.s.tier.Archive(ctx, f.s.h, w, cal.DayStart(days[0].AddDays(-1)), w, cold.Readings(inKeyOrder(below))); err != nil {
		t.Fatal(err)
	}
	f.s.addHot(above...)
	f.catchUp(t)
	f.o.rows = append(f.o.rows, below...)
	f.o.rows = append(f.o.rows, above...)
	p, err := f.s.tier.Plan(ctx, f.s.h, series.Range{})
	if err != nil {
		t.Fatal(err)
	}
	snaps := []int64{p.SnapshotID}
	var knownAt []time.Time
	correct := func(r series.Reading, v uint64, at time.Time) series.Reading {
		r.Version, r.RecordedAt = v, at
		r.Value = series.Decimal(rng.Int64N(1_000_000_000))
		r.Quality = qualities[rng.IntN(len(qualities))]
		return r
	}
	for b := range 3 {
		at := time.Now().UTC().Truncate(time.Microsecond)
		waitPast(t, at)
		seen := map[string]bool{}
		var late, hot []series.Reading
		pick := func(rows []series.Reading) (series.Reading, bool) {
			r := rows[rng.IntN(len(rows))]
			k := r.MaLo + r.Extra["channel"] + r.From.String()
			if seen[k] {
				return r, false
			}
			seen[k] = true
			return r, true
		}
		for range 6 {
			if r, ok := pick(below); ok {
				v := uint64(200 + b)
				if rng.IntN(3) == 0 {
					v = uint64(5 + b) // below every archived version
				}
				late = append(late, correct(r, v, at))
			}
			if r, ok := pick(above); ok {
				hot = append(hot, correct(r, uint64(200+b), at))
			}
		}
		for _, r := range missing {
			if r.From.Before(w) && !seen[r.MaLo+r.Extra["channel"]+r.From.String()] {
				seen[r.MaLo+r.Extra["channel"]+r.From.String()] = true
				late = append(late, correct(r, uint64(300+b), at))
				break
			}
		}
		if _, err := f.s.tier.AppendLate(ctx, f.s.h, inKeyOrder(late)); err != nil {
			t.Fatalf("late batch %d: %v", b, err)
		}
		f.s.addHot(hot...)
		if b != 1 {
			// After the second batch, the rollup stays behind.
			f.catchUp(t)
		}
		f.o.rows = append(f.o.rows, late...)
		f.o.rows = append(f.o.rows, hot...)
		knownAt = append(knownAt, at)
		p, err := f.s.tier.Plan(ctx, f.s.h, series.Range{})
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, p.SnapshotID)
	}
	f.modes = []dailyMode{
		{"current", ReadOptions{}, time.Time{}},
		{"as of the snapshot before the late corrections", ReadOptions{AsOfSnapshot: snaps[0]}, knownAt[0].Add(-time.Microsecond)},
		{"as of the snapshot of the first late batch", ReadOptions{AsOfSnapshot: snaps[1]}, knownAt[1].Add(-time.Microsecond)},
		{"as of the snapshot of the second late batch, which the rollup does not reflect", ReadOptions{AsOfSnapshot: snaps[2]}, knownAt[2].Add(-time.Microsecond)},
		{"as known after the first late batch", ReadOptions{KnownAt: knownAt[0]}, knownAt[0]},
		{"as known after the second late batch", ReadOptions{KnownAt: knownAt[1]}, knownAt[1]},
	}
	return f
}

// rollup returns the lines of rollup.Compute's rows for the days lo to
// hi of what was recorded at or before known, rendered as daily's.
func (f *dailyFixture) rollup(lo, hi metering.Date, known time.Time) []string {
	var out []string
	for _, x := range rollup.Compute(f.tab, cal, f.o.visible(known), 0) {
		if x.Day.Compare(lo) < 0 || x.Day.Compare(hi) > 0 {
			continue
		}
		ch := ""
		if len(x.Identity) > 0 {
			ch = x.Identity[0]
		}
		out = append(out, fmt.Sprintf("%s|%s|%s|%s|%s|%s|%s|%d|%d|%s|%d|%d|%d|%d|%d", x.MaLo, x.OBIS, ch, x.Day, x.Commodity, x.Resolution, x.Unit,
			x.Expected, x.Present, series.Decimal(x.Sum), x.Qualities[0], x.Qualities[1], x.Qualities[2], x.MaxVersion, x.MaxRecord.UnixMicro()))
	}
	slices.Sort(out)
	return out
}

// catchUp catches the rollup up with the table.
func (f *dailyFixture) catchUp(t *testing.T) {
	t.Helper()
	if _, err := f.s.tier.CatchUpRollup(t.Context(), f.s.h); err != nil {
		t.Fatal(err)
	}
}

// A rollupSource plans the stored rollup for daily, counting the plans
// it makes; latest, a deliberately wrong one, plans the rollup of the
// table's latest snapshot whichever snapshot a read asks for.
type rollupSource struct {
	*icebergSource
	latest bool
	used   atomic.Int64
}

func (s *rollupSource) Rollup(ctx context.Context, source int64, q series.Range) (cold.Plan, bool, error) {
	if s.latest {
		st, err := s.tier.RollupState(ctx, s.tier.RollupHandle(s.h))
		if err != nil {
			return cold.Plan{}, false, err
		}
		source = st.Source
	}
	p, ok, err := s.tier.PlanRollup(ctx, s.h, source, q)
	if err != nil || !ok {
		return cold.Plan{}, false, err
	}
	s.used.Add(1)
	lp, err := p.Local(ctx, s.cache)
	return lp, err == nil, err
}

func (s *rollupSource) RollupCurrent(ctx context.Context, q series.Range) (cold.Plan, int64, bool, error) {
	p, source, ok, err := s.tier.PlanRollupCurrent(ctx, s.h, q)
	if err != nil || !ok {
		return cold.Plan{}, 0, false, err
	}
	s.used.Add(1)
	lp, err := p.Local(ctx, s.cache)
	return lp, source, err == nil, err
}

var _ RollupSource = (*rollupSource)(nil)

// check returns the checks of daily that fail on e, for each mode, for
// every day and for each range of days, by name.
func (f *dailyFixture) check(t *testing.T, e *Engine, ranges [][2]string) []string {
	var failed []string
	for _, m := range f.modes {
		for _, r := range append([][2]string{{"1970-01-01", "2099-12-31"}}, ranges...) {
			want, err := f.o.daily(f.tab, date(t, r[0]), date(t, r[1]), m.known)
			if err != nil {
				t.Fatal(err)
			}
			if len(want) == 0 {
				t.Fatalf("oracle: no days in %s..%s", r[0], r[1])
			}
			// The rollup the cold tier stores computes the same rows.
			if computed := f.rollup(date(t, r[0]), date(t, r[1]), m.known); !slices.Equal(computed, want) {
				t.Fatalf("rollup.Compute, %s..%s, %s: %d rows, want %d; first difference: %s", r[0], r[1], m.name, len(computed), len(want), firstDifference(computed, want))
			}
			sql := dailyLines(f.channel) + ` WHERE balancing_day BETWEEN '` + r[0] + `' AND '` + r[1] + `'`
			name := "daily " + r[0] + ".." + r[1] + ", " + m.name
			res, err := queryAt(t.Context(), e, sql, m.opts)
			if err != nil {
				failed = append(failed, fmt.Sprintf("%s: %v", name, err))
				continue
			}
			got := make([]string, len(res.Rows))
			for i, row := range res.Rows {
				vals := make([]string, len(row))
				for j, v := range row {
					vals[j] = fmt.Sprint(v)
				}
				got[i] = strings.Join(vals, "|")
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				failed = append(failed, fmt.Sprintf("%s: %d rows, want %d; first difference: %s", name, len(got), len(want), firstDifference(got, want)))
			}
		}
	}
	return failed
}

// TestDailyOracle checks daily against GROUP BY over the oracle's winning
// readings, for quarter hours around the spring clock change (W within its
// day) and for hourly gas days (W within the short gas day), now, as of
// snapshots before and between late corrections and as known between
// them; a resolution that trusts the archival's marks over the late
// corrections must fail it.
func TestDailyOracle(t *testing.T) {
	for _, c := range []struct {
		name      string
		tab       *series.Table
		channel   string
		w         time.Time
		intervals func(i int, d metering.Date) []series.Reading
		ranges    [][2]string
	}{
		{"electricity", loadProfile(), "channel", time.Date(2026, 3, 29, 9, 0, 0, 0, time.UTC),
			func(i int, d metering.Date) []series.Reading {
				rows := quarters(i, d)
				for k := range rows {
					rows[k].Extra = map[string]string{"channel": []string{"A", "B"}[(i+k)%2]}
					rows[k].VersionScope = "9900000000003:" + d.String()[:7]
				}
				return rows
			},
			[][2]string{{"2026-03-29", "2026-03-29"}, {"2026-03-27", "2026-03-28"}, {"2026-03-30", "2026-03-31"}}},
		{"gas", gasHourly(), "''", time.Date(2026, 3, 29, 2, 0, 0, 0, time.UTC),
			func(i int, d metering.Date) []series.Reading {
				rows := gasHours(i, d)
				for k := range rows {
					rows[k].VersionScope = "9900000000003:" + d.String()[:7]
				}
				return rows
			},
			[][2]string{{"2026-03-28", "2026-03-28"}, {"2026-03-29", "2026-03-31"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			days := []metering.Date{date(t, "2026-03-27"), date(t, "2026-03-28"), date(t, "2026-03-29"), date(t, "2026-03-30"), date(t, "2026-03-31")}
			f := newDailyFixture(t, c.tab, c.channel, days, c.w, c.intervals)
			e, err := single(c.tab, f.s, Settings{Threads: 1})
			if err != nil {
				t.Fatal(err)
			}
			if failed := f.check(t, e, c.ranges); len(failed) > 0 {
				t.Fatalf("%d checks failed:\n%s", len(failed), strings.Join(failed, "\n"))
			}
			// With the stored rollup for the snapshots it reflects.
			rs := &rollupSource{icebergSource: f.s}
			stored, err := single(c.tab, rs, Settings{Threads: 1})
			if err != nil {
				t.Fatal(err)
			}
			if failed := f.check(t, stored, c.ranges); len(failed) > 0 {
				t.Fatalf("with the rollup, %d checks failed:\n%s", len(failed), strings.Join(failed, "\n"))
			}
			if rs.used.Load() == 0 {
				t.Fatal("no read used the rollup")
			}
			t.Logf("%d reads used the rollup", rs.used.Load())
			// A late correction the rollup does not reflect yet: a current
			// read finds the rollup behind and reads the table whole.
			var fix series.Reading
			for _, r := range f.o.rows {
				if r.From.Before(c.w.Add(-24*time.Hour)) && r.Version < 900 {
					fix = r
					break
				}
			}
			if fix.MaLo == "" {
				t.Fatal("no reading a day before W to correct")
			}
			fix.Version, fix.Value, fix.RecordedAt = 900, 123_456_789, time.Now().UTC().Truncate(time.Microsecond)
			if _, err := f.s.tier.AppendLate(t.Context(), f.s.h, []series.Reading{fix}); err != nil {
				t.Fatal(err)
			}
			f.o.rows = append(f.o.rows, fix)
			all := f.modes
			f.modes = f.modes[:1]
			if failed := f.check(t, stored, c.ranges); len(failed) > 0 {
				t.Fatalf("with the rollup behind, %d checks failed:\n%s", len(failed), strings.Join(failed, "\n"))
			}
			f.modes = all
			rs.latest = true
			if failed := f.check(t, stored, c.ranges); len(failed) == 0 {
				t.Fatal("a rollup of another snapshot than the one read passed the oracle")
			} else {
				t.Logf("a rollup of another snapshot than the one read failed %d checks", len(failed))
			}
			e.firstTable().broken = brokenTrustMarks
			failed := f.check(t, e, c.ranges)
			if len(failed) == 0 {
				t.Fatal("a resolution that ignores late corrections passed the oracle")
			}
			t.Logf("a resolution that ignores late corrections failed %d checks", len(failed))
		})
	}
}

package query

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/series"
)

// A resolutionOracle holds every reading written, with when it was
// recorded.
type resolutionOracle struct{ rows []series.Reading }

// answer returns the lines readings must show for [lo, hi) of what was
// recorded at or before known (zero: everything): per merge key the
// highest version, then the latest recorded_at.
func (o *resolutionOracle) answer(lo, hi, known time.Time) []string {
	var out []string
	for _, r := range o.resolved(known) {
		if inRange(r.From, lo, hi) {
			out = append(out, fmt.Sprintf("%s|%s|%d|%d|%s", r.MaLo, r.Extra["channel"], r.From.UnixMicro(), r.Version, r.Value))
		}
	}
	slices.Sort(out)
	return out
}

const resolvedLines = `SELECT malo_id, channel, epoch_us("from"), CAST(version AS VARCHAR), CAST(value AS VARCHAR) FROM readings`

// TestResolutionOracle archives two months whose merge keys have up to three
// versions each, then stores late corrections below W (several versions of
// some keys, one lower than the archived winner, one a new key) and
// corrections in the hot tier, and checks readings and completeness
// against an oracle: now, as of the snapshot before the late corrections,
// and as known between them. Completeness is read for ranges of balancing
// days in either tier and across W, around the spring clock change, and
// at the lookback's edge. Each deliberately broken resolution, which
// treats superseded rows as current, must fail it; brokenIgnoreMarks must
// fail completeness too.
func TestResolutionOracle(t *testing.T) {
	ctx := t.Context()
	tab := loadProfile()
	s := newIcebergSource(t, tab)
	rng := rand.New(rand.NewPCG(11, uint64(time.Now().UnixNano())))
	o := &resolutionOracle{}
	base := time.Now().Add(-time.Hour).UTC().Truncate(time.Microsecond)
	// versions returns each of rows on channel ch in 1 to 3 versions
	// recorded apart.
	versions := func(ch string, rows []series.Reading) []series.Reading {
		var out []series.Reading
		for _, r := range rows {
			r.Extra = map[string]string{"channel": ch}
			r.VersionScope = "9900000000003:" + r.BalancingDay.String()[:7]
			for v := range rng.IntN(3) + 1 {
				r.Version = uint64(10 + 10*v)
				r.RecordedAt = base.Add(time.Duration(v) * time.Second)
				r.Value = series.Decimal(rng.Int64N(1_000_000_000))
				out = append(out, r)
			}
		}
		return out
	}
	// month returns the readings of 3 meters × 2 channels × 24 quarter
	// hours from start.
	month := func(start time.Time) []series.Reading {
		var rows []series.Reading
		for i := range 3 {
			for _, ch := range []string{"A", "B"} {
				rows = append(rows, versions(ch, quarterHours(i, start, 24))...)
			}
		}
		return rows
	}
	jan10, mar1, mar29 := date(t, "2026-01-10"), date(t, "2026-03-01"), date(t, "2026-03-29")
	// Besides: meter 3 delivers only 8 quarter hours of 10 January, seen
	// before ranges beginning up to 31 days later; the first hour of 1
	// March (Berlin), before midnight UTC, is archived with February, so
	// the day lies in both tiers.
	extra := map[time.Time][]series.Reading{
		jan2026: versions("B", quarters(3, jan10)[:8]),
		feb2026: versions("A", quarters(0, mar1)[:4]),
	}
	for _, w := range [][2]time.Time{{jan2026, feb2026}, {feb2026, mar2026}} {
		rows := inKeyOrder(append(month(w[0]), extra[w[0]]...))
		if _, err := s.tier.Archive(ctx, s.h, w[1], w[0], w[1], cold.Readings(rows)); err != nil {
			t.Fatal(err)
		}
		o.rows = append(o.rows, rows...)
	}
	// In the hot tier, the day summer time begins: meter 4 appears with
	// all but two of its 92 quarter hours, and meter 1 delivers the first
	// three hours on channel B.
	march := slices.Concat(month(mar2026), versions("A", quarters(4, mar29, 40, 41)), versions("B", quarters(1, mar29)[:12]))
	s.addHot(march...)
	o.rows = append(o.rows, march...)
	p, err := s.tier.Plan(ctx, s.h, series.Range{})
	if err != nil {
		t.Fatal(err)
	}
	snap := p.SnapshotID
	if !slices.Contains(p.Kinds, cold.Current) || !slices.Contains(p.Kinds, cold.Superseded) || slices.Contains(p.Kinds, cold.Open) || slices.Contains(p.Kinds, cold.Mixed) {
		t.Fatalf("archived files of kinds %v, want current and superseded ones", p.Kinds)
	}

	// Late corrections in three batches, recorded after the snapshot.
	// Keys of the first meter's first hour get one each time (several
	// versions of one key in open files); a random few get one version
	// below the archived winner, which must not win. The second batch
	// adds a quarter hour meter 3 had not delivered.
	var knownAt []time.Time
	archived := slices.Clone(o.rows[:len(o.rows)-len(march)])
	for b := range 3 {
		at := time.Now().UTC().Truncate(time.Microsecond)
		waitPast(t, at)
		var late []series.Reading
		seen := map[string]bool{}
		add := func(r series.Reading, v uint64) {
			k := r.MaLo + r.Extra["channel"] + r.From.String()
			if seen[k] {
				return
			}
			seen[k] = true
			r.Version, r.RecordedAt = v, at
			r.Value = series.Decimal(rng.Int64N(1_000_000_000))
			late = append(late, r)
		}
		for _, r := range archived {
			if r.MaLo == malo(0) && r.Extra["channel"] == "A" && r.From.Sub(r.From.Truncate(24*time.Hour)) < time.Hour {
				add(r, uint64(100+b))
			}
		}
		for range 4 {
			r := archived[rng.IntN(len(archived))]
			if rng.IntN(2) == 0 {
				add(r, uint64(200+b))
			} else {
				add(r, uint64(5+b)) // below every archived version
			}
		}
		if b == 1 {
			add(versions("B", quarters(3, jan10)[20:21])[0], 300)
		}
		if _, err := s.tier.AppendLate(ctx, s.h, inKeyOrder(late)); err != nil {
			t.Fatalf("late batch %d: %v", b, err)
		}
		o.rows = append(o.rows, late...)
		knownAt = append(knownAt, at)
	}

	modes := []struct {
		name  string
		opts  ReadOptions
		known time.Time
	}{
		{"current", ReadOptions{}, time.Time{}},
		{"as of the snapshot before the late corrections", ReadOptions{AsOfSnapshot: snap}, knownAt[0].Add(-time.Microsecond)},
		{"as known after the second late batch", ReadOptions{KnownAt: knownAt[1]}, knownAt[1]},
	}
	// Ranges of balancing days: the first delivery within the range (no
	// lookback), across the archived months, meter 3 on the lookback's
	// first day and just past it, across W, the clock change in the hot
	// tier, and everything.
	ranges := [][2]string{
		{"2025-12-30", "2026-01-02"},
		{"2026-01-31", "2026-02-03"},
		{"2026-02-10", "2026-02-12"},
		{"2026-02-11", "2026-02-12"},
		{"2026-02-27", "2026-03-02"},
		{"2026-03-27", "2026-03-30"},
		{"2026-01-01", "2026-03-31"},
	}
	// The oracle itself must see what the fixture was made for: a series
	// appearing on the day of the clock change, one seen before the range
	// and silent in it (or not, a day later), a late new key, a day in
	// both tiers.
	for _, c := range []struct {
		lo, hi string
		mode   int
		i      int
		ch     string
		day    string
		want   string // expected present missing surplus
	}{
		{"2026-03-27", "2026-03-30", 0, 4, "A", "2026-03-28", "none"},
		{"2026-03-27", "2026-03-30", 0, 4, "A", "2026-03-29", "92 90 2 0"},
		{"2026-03-27", "2026-03-30", 0, 4, "A", "2026-03-30", "96 0 96 0"},
		{"2026-03-27", "2026-03-30", 0, 1, "B", "2026-03-29", "92 12 80 0"},
		{"2026-03-27", "2026-03-30", 0, 0, "A", "2026-03-29", "92 0 92 0"},
		{"2026-02-10", "2026-02-12", 0, 3, "B", "2026-02-10", "96 0 96 0"},
		{"2026-02-11", "2026-02-12", 0, 3, "B", "2026-02-11", "none"},
		{"2026-01-01", "2026-03-31", 0, 3, "B", "2026-01-10", "96 9 87 0"},
		{"2026-01-01", "2026-03-31", 1, 3, "B", "2026-01-10", "96 8 88 0"},
		{"2026-02-27", "2026-03-02", 0, 0, "A", "2026-03-01", "96 28 68 0"},
		{"2025-12-30", "2026-01-02", 0, 0, "A", "2025-12-31", "none"},
		{"2025-12-30", "2026-01-02", 0, 0, "A", "2026-01-01", "96 24 72 0"},
	} {
		lines, err := o.completeness(tab, date(t, c.lo), date(t, c.hi), modes[c.mode].known)
		if err != nil {
			t.Fatal(err)
		}
		got := "none"
		for _, l := range lines {
			if f := strings.Split(l, "|"); f[0] == malo(c.i) && f[2] == c.ch && f[5] == c.day {
				got = strings.Join(f[8:], " ")
			}
		}
		if got != c.want {
			t.Fatalf("oracle: completeness %s..%s, %s: meter %d %s on %s: %s, want %s", c.lo, c.hi, modes[c.mode].name, c.i, c.ch, c.day, got, c.want)
		}
	}
	// check returns the checks that fail on e, by name.
	check := func(e *Engine) []string {
		var failed []string
		lines := func(name, sql string, opts ReadOptions, want []string) {
			res, err := queryAt(ctx, e, sql, opts)
			if err != nil {
				failed = append(failed, fmt.Sprintf("%s: %v", name, err))
				return
			}
			got := make([]string, len(res.Rows))
			for i, r := range res.Rows {
				f := make([]string, len(r))
				for j, v := range r {
					f[j] = fmt.Sprint(v)
				}
				got[i] = strings.Join(f, "|")
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				failed = append(failed, fmt.Sprintf("%s: %d rows, want %d; first difference: %s", name, len(got), len(want), firstDifference(got, want)))
			}
		}
		for _, c := range []struct {
			name   string
			lo, hi time.Time
			mode   int
		}{
			{"everything", time.Time{}, time.Time{}, 0},
			{"January", jan2026, feb2026, 0},
			{"across W", feb2026.Add(12 * time.Hour), mar2026.Add(3 * time.Hour), 0},
			{"everything", time.Time{}, time.Time{}, 1},
			{"everything", time.Time{}, time.Time{}, 2},
		} {
			m := modes[c.mode]
			lines("readings "+c.name+", "+m.name, resolvedLines+where(c.lo, c.hi), m.opts, o.answer(c.lo, c.hi, m.known))
		}
		for _, m := range modes {
			for _, r := range ranges {
				want, err := o.completeness(tab, date(t, r[0]), date(t, r[1]), m.known)
				if err != nil {
					t.Fatal(err)
				}
				sql := completenessLines + ` WHERE balancing_day BETWEEN '` + r[0] + `' AND '` + r[1] + `'`
				lines("completeness "+r[0]+".."+r[1]+", "+m.name, sql, m.opts, want)
			}
		}
		return failed
	}
	e, err := single(tab, s, Settings{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	if failed := check(e); len(failed) > 0 {
		t.Fatalf("%d checks failed:\n%s", len(failed), strings.Join(failed, "\n"))
	}
	// Files that hold current and superseded versions together, as files
	// written before the column partitioned the table do, are filtered.
	mixed, err := single(tab, mixedSource{s}, Settings{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	if failed := check(mixed); len(failed) > 0 {
		t.Fatalf("with mixed files, %d checks failed:\n%s", len(failed), strings.Join(failed, "\n"))
	}
	for _, b := range []broken{brokenTrustMarks, brokenIgnoreMarks} {
		e.firstTable().broken = b
		failed := check(e)
		if len(failed) == 0 {
			t.Errorf("broken resolution %d passed the oracle", b)
			continue
		}
		byCompleteness := 0
		for _, f := range failed {
			if strings.HasPrefix(f, "completeness ") {
				byCompleteness++
			}
		}
		t.Logf("broken resolution %d caught by %d checks, %d of completeness:\n%s", b, len(failed), byCompleteness, strings.Join(failed, "\n"))
		if b == brokenIgnoreMarks && byCompleteness == 0 {
			t.Errorf("broken resolution %d passed every check of completeness", b)
		}
	}
}

// where renders [lo, hi) as a WHERE clause; a zero bound is left out.
func where(lo, hi time.Time) string {
	var c []string
	if !lo.IsZero() {
		c = append(c, `"from" >= `+timestamptz(lo))
	}
	if !hi.IsZero() {
		c = append(c, `"from" < `+timestamptz(hi))
	}
	if len(c) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(c, " AND ")
}

func firstDifference(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("got %s, want %s", got[i], want[i])
		}
	}
	return "one is a prefix of the other"
}

// A mixedSource plans its settled files as cold.Mixed: the engine must
// then filter their superseded rows itself.
type mixedSource struct{ *icebergSource }

func (m mixedSource) Cold(ctx context.Context, q series.Range) (cold.Plan, error) {
	return mixedPlan(m.icebergSource.Cold(ctx, q))
}

func (m mixedSource) ColdAt(ctx context.Context, q series.Range, ref cold.SnapshotRef) (cold.Plan, error) {
	return mixedPlan(m.icebergSource.ColdAt(ctx, q, ref))
}

func mixedPlan(p cold.Plan, err error) (cold.Plan, error) {
	kinds := slices.Clone(p.Kinds)
	for i, k := range kinds {
		if k != cold.Open {
			kinds[i] = cold.Mixed
		}
	}
	p.Kinds = kinds
	return p, err
}

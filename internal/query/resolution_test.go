package query

import (
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
	type key struct {
		malo, channel string
		from          int64
	}
	best := map[key]series.Reading{}
	for _, r := range o.rows {
		if !inRange(r.From, lo, hi) || (!known.IsZero() && r.RecordedAt.After(known)) {
			continue
		}
		k := key{r.MaLo, r.Extra["channel"], r.From.UnixMicro()}
		b, ok := best[k]
		if !ok || r.Version > b.Version || (r.Version == b.Version && r.RecordedAt.After(b.RecordedAt)) {
			best[k] = r
		}
	}
	var out []string
	for _, r := range best {
		out = append(out, fmt.Sprintf("%s|%s|%d|%d|%s", r.MaLo, r.Extra["channel"], r.From.UnixMicro(), r.Version, r.Value))
	}
	slices.Sort(out)
	return out
}

const resolvedLines = `SELECT malo_id, channel, epoch_us("from"), CAST(version AS VARCHAR), CAST(value AS VARCHAR) FROM readings`

// TestResolutionOracle archives two months whose merge keys have up to three
// versions each, then stores late corrections below W (several versions of
// some keys, one lower than the archived winner) and corrections in the hot
// tier, and checks readings against an oracle: now, as of the snapshot
// before the late corrections, and as known between them. Each deliberately
// broken resolution, which treats superseded rows as current, must fail it.
func TestResolutionOracle(t *testing.T) {
	ctx := t.Context()
	tab := loadProfile()
	s := newIcebergSource(t, tab)
	rng := rand.New(rand.NewPCG(11, uint64(time.Now().UnixNano())))
	o := &resolutionOracle{}
	base := time.Now().Add(-time.Hour).UTC().Truncate(time.Microsecond)
	// month returns the readings of 3 meters × 2 channels × 24 quarter
	// hours from start, each key in 1 to 3 versions recorded apart.
	month := func(start time.Time) []series.Reading {
		var rows []series.Reading
		for i := range 3 {
			for _, ch := range []string{"A", "B"} {
				for _, r := range quarterHours(i, start, 24) {
					r.Extra = map[string]string{"channel": ch}
					for v := range rng.IntN(3) + 1 {
						r.Version = uint64(10 + 10*v)
						r.RecordedAt = base.Add(time.Duration(v) * time.Second)
						r.Value = series.Decimal(rng.Int64N(1_000_000_000))
						rows = append(rows, r)
					}
				}
			}
		}
		return inKeyOrder(rows)
	}
	for _, w := range [][2]time.Time{{jan2026, feb2026}, {feb2026, mar2026}} {
		rows := month(w[0])
		if _, err := s.tier.Archive(ctx, s.h, w[1], w[0], w[1], cold.Readings(rows)); err != nil {
			t.Fatal(err)
		}
		o.rows = append(o.rows, rows...)
	}
	march := month(mar2026)
	s.addHot(march...)
	o.rows = append(o.rows, march...)
	p, err := s.tier.Plan(ctx, s.h, series.Range{})
	if err != nil {
		t.Fatal(err)
	}
	snap := p.SnapshotID
	if len(p.Settled) < 2 || slices.Contains(p.Settled, false) {
		t.Fatalf("archived files settled %v, want all", p.Settled)
	}

	// Late corrections in three batches, recorded after the snapshot.
	// Keys of the first meter's first hour get one each time (several
	// versions of one key in open files); a random few get one version
	// below the archived winner, which must not win.
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
		if _, err := s.tier.AppendLate(ctx, s.h, late); err != nil {
			t.Fatalf("late batch %d: %v", b, err)
		}
		o.rows = append(o.rows, late...)
		knownAt = append(knownAt, at)
	}

	check := func(e *Engine) error {
		for _, c := range []struct {
			name   string
			lo, hi time.Time
			opts   ReadOptions
			known  time.Time
		}{
			{"everything", time.Time{}, time.Time{}, ReadOptions{}, time.Time{}},
			{"January", jan2026, feb2026, ReadOptions{}, time.Time{}},
			{"across W", feb2026.Add(12 * time.Hour), mar2026.Add(3 * time.Hour), ReadOptions{}, time.Time{}},
			{"as of the snapshot before the late corrections", time.Time{}, time.Time{}, ReadOptions{AsOfSnapshot: snap}, knownAt[0].Add(-time.Microsecond)},
			{"as known after the second late batch", time.Time{}, time.Time{}, ReadOptions{KnownAt: knownAt[1]}, knownAt[1]},
		} {
			sql := resolvedLines + where(c.lo, c.hi)
			res, err := e.QueryAt(ctx, sql, c.opts)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			got := make([]string, len(res.Rows))
			for i, r := range res.Rows {
				got[i] = fmt.Sprintf("%v|%v|%v|%v|%v", r...)
			}
			slices.Sort(got)
			if want := o.answer(c.lo, c.hi, c.known); !slices.Equal(got, want) {
				return fmt.Errorf("%s: %d rows, want %d; first difference: %s", c.name, len(got), len(want), firstDifference(got, want))
			}
		}
		return nil
	}
	e, err := New(tab, s, Settings{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := check(e); err != nil {
		t.Fatal(err)
	}
	for _, b := range []broken{brokenTrustMarks, brokenIgnoreMarks} {
		e.broken = b
		if err := check(e); err == nil {
			t.Errorf("broken resolution %d passed the oracle", b)
		} else {
			t.Logf("broken resolution %d caught: %v", b, err)
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

package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/series"
)

// An oracle holds every acknowledged reading, by merge key and version.
type oracle struct {
	rows map[oracleKey]int64 // value in millionths
}

type oracleKey struct {
	malo, channel string
	from          time.Time
	version       uint64
}

func (o *oracle) ack(rs []Reading) {
	for _, r := range rs {
		o.rows[oracleKey{r.MaLo, r.Extra["channel"], r.From.UTC(), r.Version}] = int64(r.Value)
	}
}

// versions returns the lines readings_versions must return for [lo, hi).
func (o *oracle) versions(lo, hi time.Time) []string {
	var out []string
	for k, v := range o.rows {
		if inRange(k.from, lo, hi) {
			out = append(out, line(k.malo, k.channel, k.from, k.version, v))
		}
	}
	slices.Sort(out)
	return out
}

// resolved returns the lines readings must return for [lo, hi): per merge
// key the highest version.
func (o *oracle) resolved(lo, hi time.Time) []string {
	type mk struct {
		malo, channel string
		from          time.Time
	}
	best := map[mk]oracleKey{}
	for k := range o.rows {
		if !inRange(k.from, lo, hi) {
			continue
		}
		m := mk{k.malo, k.channel, k.from}
		if b, ok := best[m]; !ok || k.version > b.version {
			best[m] = k
		}
	}
	var out []string
	for _, k := range best {
		out = append(out, line(k.malo, k.channel, k.from, k.version, o.rows[k]))
	}
	slices.Sort(out)
	return out
}

func inRange(t, lo, hi time.Time) bool {
	return (lo.IsZero() || !t.Before(lo)) && (hi.IsZero() || t.Before(hi))
}

func line(malo, ch string, from time.Time, version uint64, value int64) string {
	return fmt.Sprintf("%s|%s|%d|%d|%s", malo, ch, from.UnixMicro(), version, series.Decimal(value))
}

// lines renders a result of (malo_id, channel, from_us, version, value).
func lines(res *Result) []string {
	out := make([]string, len(res.Rows))
	for i, r := range res.Rows {
		out[i] = fmt.Sprintf("%v|%v|%v|%v|%v", r...)
	}
	slices.Sort(out)
	return out
}

// where renders [lo, hi) as a WHERE clause; a zero bound is left out.
func where(lo, hi time.Time) string {
	var c []string
	if !lo.IsZero() {
		c = append(c, `"from" >= `+ts(lo))
	}
	if !hi.IsZero() {
		c = append(c, `"from" < `+ts(hi))
	}
	if len(c) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(c, " AND ")
}

// TestOracle drives random deliveries, corrections, late corrections,
// redeliveries and maintenance cycles over simulated days, and checks
// every query against the acknowledged readings: readings_versions and
// readings, for ranges below, across and above the watermark.
func TestOracle(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	rng := rand.New(rand.NewPCG(7, uint64(time.Now().UnixNano())))
	o := &oracle{rows: map[oracleKey]int64{}}
	const meters, days = 3, 12
	if _, err := s.hot.CreatePartitions(ctx, s.tables[0].decl, dayN(0), dayN(days)); err != nil {
		t.Fatal(err)
	}
	m := s.Maintenance()
	var sent [][]Reading
	version := uint64(1000)
	queries, tiersSeen := 0, map[string]int{}
	for d := range days {
		now := dayN(d + 1).Add(6 * time.Hour)
		var batch []Reading
		version++
		for i := range meters {
			for _, ch := range []string{"A", "B"} {
				for slot := range 96 {
					batch = append(batch, qh(i, d, slot, ch, version, rng.Int64N(5_000_000)))
				}
			}
		}
		res := mustWrite(t, s, batch)
		o.ack(batch)
		if res.Inserted != len(batch) {
			t.Fatalf("day %d: inserted %d of %d", d, res.Inserted, len(batch))
		}
		sent = append(sent, batch)
		// Corrections of earlier days: a new version with another value.
		// Those below W are late and go to the cold tier.
		for range 2 {
			if d == 0 {
				break
			}
			c := rng.IntN(d)
			version++
			var corr []Reading
			for range 5 {
				corr = append(corr, qh(rng.IntN(meters), c, rng.IntN(96), []string{"A", "B"}[rng.IntN(2)], version, rng.Int64N(5_000_000)))
			}
			corr = dedupe(corr)
			if _, err := s.Write(ctx, "power", corr); err != nil {
				t.Fatalf("day %d: correction of day %d: %v", d, c, err)
			}
			o.ack(corr)
		}
		// A redelivery of an earlier batch is a no-op, wherever it lives.
		old := sent[rng.IntN(len(sent))]
		re := old[:rng.IntN(len(old))+1]
		if res, err := s.Write(ctx, "power", re); err != nil {
			t.Fatalf("day %d: redelivery: %v", d, err)
		} else if res.Inserted != 0 {
			t.Fatalf("day %d: redelivery inserted %d rows", d, res.Inserted)
		}
		out := m.Cycle(ctx, now)
		if f := out.Failures(); len(f) > 0 {
			t.Fatalf("day %d: maintenance: %v", d, f[0].Err)
		}
		w, hasW, err := s.cold.Watermark(ctx, s.tables[0].cold)
		if err != nil {
			t.Fatal(err)
		}
		for q := range 3 {
			lo, hi := randomRange(rng, d, w, hasW, q)
			check(t, s, o, lo, hi, w, hasW, tiersSeen)
			queries++
		}
	}
	if tiersSeen["cold"] == 0 || tiersSeen["hot"] == 0 || tiersSeen["both"] == 0 {
		t.Fatalf("the workload never queried every tier combination: %v", tiersSeen)
	}
	w, hasW, _ := s.cold.Watermark(ctx, s.tables[0].cold)
	if !hasW || !w.After(dayN(days-5)) {
		t.Fatalf("archival did not move W far enough: %v", w)
	}
	t.Logf("%d queries, %d readings acknowledged, W %s, tiers %v", queries, len(o.rows), w, tiersSeen)
}

// randomRange picks a query range: q 0 below W, 1 across it, 2 above it
// (or anywhere, with open bounds now and then).
func randomRange(rng *rand.Rand, d int, w time.Time, hasW bool, q int) (lo, hi time.Time) {
	span := time.Duration(d+1) * 24 * time.Hour
	at := func() time.Time {
		return day0.Add(time.Duration(rng.Int64N(int64(span/(15*time.Minute)))) * 15 * time.Minute)
	}
	lo, hi = at(), at()
	if hi.Before(lo) {
		lo, hi = hi, lo
	}
	if hasW {
		switch q {
		case 0:
			hi = w
		case 1:
			lo, hi = w.Add(-time.Duration(rng.IntN(200))*15*time.Minute), w.Add(time.Duration(rng.IntN(200)+1)*15*time.Minute)
		case 2:
			lo = w
		}
	}
	switch rng.IntN(6) {
	case 0:
		lo = time.Time{}
	case 1:
		hi = time.Time{}
	}
	return lo, hi
}

func check(t *testing.T, s *Store, o *oracle, lo, hi, w time.Time, hasW bool, seen map[string]int) {
	t.Helper()
	cols := `SELECT malo_id, channel, epoch_us("from"), CAST(version AS VARCHAR), CAST(value AS VARCHAR) FROM `
	for _, c := range []struct {
		rel  string
		want []string
	}{
		{"readings_versions", o.versions(lo, hi)},
		{"readings", o.resolved(lo, hi)},
	} {
		sql := cols + c.rel + where(lo, hi)
		res := mustQuery(t, s, sql)
		if got := lines(res); !slices.Equal(got, c.want) {
			t.Fatalf("%s\nW %v: %d rows, want %d\n%s", sql, w, len(got), len(c.want), firstDiff(got, c.want))
		}
		cold, hotTier := slices.Contains(res.Tiers, "cold"), slices.Contains(res.Tiers, "hot")
		switch {
		case cold && hotTier:
			seen["both"]++
		case cold:
			seen["cold"]++
		case hotTier:
			seen["hot"]++
		}
		if hasW && !hi.IsZero() && !hi.After(w) && hotTier {
			t.Errorf("%s: read the hot tier for a range below W %v", sql, w)
		}
		if hasW && !lo.IsZero() && !lo.Before(w) && cold {
			t.Errorf("%s: read the cold tier for a range above W %v", sql, w)
		}
	}
	// An aggregate over the resolved readings, as a settlement would.
	res := mustQuery(t, s, `SELECT malo_id, CAST(sum(value) AS VARCHAR) FROM readings`+where(lo, hi)+` GROUP BY malo_id`)
	got := map[string]string{}
	for _, r := range res.Rows {
		got[r[0].(string)] = r[1].(string)
	}
	sums := map[string]int64{}
	for _, l := range o.resolved(lo, hi) {
		f := strings.Split(l, "|")
		v, err := series.ParseDecimal(f[4])
		if err != nil {
			t.Fatal(err)
		}
		sums[f[0]] += int64(v)
	}
	if len(got) != len(sums) {
		t.Fatalf("sum per meter over [%v, %v): %d meters, want %d", lo, hi, len(got), len(sums))
	}
	for k, v := range sums {
		if got[k] != series.Decimal(v).String() {
			t.Fatalf("sum of %s over [%v, %v): %s, want %s", k, lo, hi, got[k], series.Decimal(v))
		}
	}
}

func firstDiff(got, want []string) string {
	g, w := map[string]bool{}, map[string]bool{}
	for _, l := range got {
		g[l] = true
	}
	for _, l := range want {
		w[l] = true
	}
	for _, l := range want {
		if !g[l] {
			return "missing " + l
		}
	}
	for _, l := range got {
		if !w[l] {
			return "unexpected " + l
		}
	}
	return "duplicates"
}

// dedupe keeps the first reading per merge key: a batch may not state one
// key twice under one version.
func dedupe(rs []Reading) []Reading {
	seen := map[string]bool{}
	var out []Reading
	for _, r := range rs {
		k := r.MaLo + r.Extra["channel"] + r.From.String()
		if !seen[k] {
			seen[k] = true
			out = append(out, r)
		}
	}
	return out
}

package hot

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// TestDaySums checks the day sums PostgreSQL computes (ScanDays) against
// GROUP BY over the winning readings a winners Scan hands over, in both
// dictionary layouts, whole and from a bound within a partition: the
// fixture's corrections (winning and losing versions) change the sums, so
// a sum over every version would fail; and a row per series and day
// crosses, not its readings.
func TestDaySums(t *testing.T) {
	for _, lay := range dictLayouts {
		t.Run(lay.String(), func(t *testing.T) { testDaySums(t, lay) })
	}
}

func testDaySums(t *testing.T, lay layout) {
	h, _ := dictTier(t, lay)
	tab := readTable(t, h, "sums", series.IntegrityStatement)
	rows := readRows(3, 3, 100)
	for i := range rows {
		switch i % 11 {
		case 3:
			rows[i].Quality = metering.Substitute
		case 5:
			rows[i].Quality = metering.Proposed
		}
	}
	mustWrite(t, h, tab, rows)
	// Versions that lose: below the winners of every seventh reading.
	var losers []series.Reading
	for i, r := range rows {
		if i%13 == 0 {
			r.Version, r.Value = 1, r.Value+7
			losers = append(losers, r)
		}
	}
	mustWrite(t, h, tab, losers)
	s, r, err := h.OpenSnapshotRead(t.Context(), 2, tab, series.Range{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cols := r.DayColumns()
	if cols == nil {
		t.Fatalf("the %s layout sums no days", lay)
	}
	lines := readAll(t, r, true)
	every := readAll(t, r, false)
	for _, lo := range []time.Time{{}, day.Add(24*time.Hour + 10*time.Hour + 15*time.Minute)} {
		want := daySumsOf(t, lines, lo)
		if slices.Equal(want, daySumsOf(t, every, lo)) {
			t.Fatal("the corrections change no day's sums: the fixture has no teeth")
		}
		before, _, _ := r.Moved()
		got := scanDays(t, r, cols, lo)
		after, _, _ := r.Moved()
		if !slices.Equal(got, want) {
			t.Fatalf("from %v: day sums\n%s\nwant\n%s", lo, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		// A row a series, day and partition: 3 meters × 2 channels × at
		// most 4 Berlin days in 3 UTC partitions, two rows a day.
		if n := after - before; n == 0 || n > 3*2*4*2 {
			t.Fatalf("from %v: %d rows crossed for %d readings", lo, n, len(lines))
		}
	}
}

// daySumsOf groups lines (as readAll renders them) from lo on by series,
// day, sparte, resolution and unit, as daily's lines.
func daySumsOf(t *testing.T, lines []string, lo time.Time) []string {
	t.Helper()
	type tally struct {
		n, sum    int64
		qualities map[string]int64
		version   uint64
		recorded  int64
	}
	groups := map[string]*tally{}
	for _, l := range lines {
		f := strings.Split(l, "|")
		// malo, melo, obis, sparte, from, to, value, unit, quality,
		// resolution, version, scope, recorded_at, day, subject, channel, ...
		from, _ := strconv.ParseInt(f[4], 10, 64)
		if !lo.IsZero() && from < lo.UnixMicro() {
			continue
		}
		key := strings.Join([]string{f[0], f[2], f[15], f[13], f[3], f[9], f[7]}, "|")
		x := groups[key]
		if x == nil {
			x = &tally{qualities: map[string]int64{}}
			groups[key] = x
		}
		v, _ := strconv.ParseInt(f[6], 10, 64)
		ver, _ := strconv.ParseUint(f[10], 10, 64)
		rec, _ := strconv.ParseInt(f[12], 10, 64)
		x.n++
		x.sum += v
		x.qualities[f[8]]++
		x.version = max(x.version, ver)
		x.recorded = max(x.recorded, rec)
	}
	var out []string
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		x := groups[key]
		var qs []string
		for _, q := range metering.Qualities() {
			qs = append(qs, fmt.Sprint(x.qualities[q.String()]))
		}
		out = append(out, fmt.Sprintf("%s|%d|%s|%s|%d|%d", key, x.n, series.Decimal(x.sum), strings.Join(qs, ","), x.version, x.recorded))
	}
	return out
}

// scanDays reads r's day sums from lo on, every unit, adds up the partial
// rows of a day and renders them as daySumsOf does.
func scanDays(t *testing.T, r *Read, cols []Column, lo time.Time) []string {
	t.Helper()
	ctx := t.Context()
	idx := make([]int, len(cols))
	at := map[string]int{}
	for i, c := range cols {
		idx[i], at[c.Name] = i, i
	}
	type tally struct {
		n, sum    int64
		qualities []int64
		version   uint64
		recorded  int64
	}
	groups := map[string]*tally{}
	for u := range r.Units(0) {
		c, err := r.ScanDays(ctx, u, lo, idx)
		if err != nil {
			t.Fatal(err)
		}
		for c.Next(ctx) {
			text := func(name string) string { return string(c.Bytes(at[name])) }
			key := strings.Join([]string{text("malo_id"), text("obis_code"), text("channel"), fmt.Sprint(c.Int64(at["balancing_day"])),
				text("sparte"), text("resolution"), text("unit")}, "|")
			x := groups[key]
			if x == nil {
				x = &tally{qualities: make([]int64, len(metering.Qualities()))}
				groups[key] = x
			}
			sum, err := series.ParseDecimal(text("value_sum"))
			if err != nil {
				t.Fatal(err)
			}
			x.n += c.Int64(at["present"])
			x.sum += int64(sum)
			for i, q := range metering.Qualities() {
				x.qualities[i] += c.Int64(at[dayQualityColumn(q)])
			}
			x.version = max(x.version, c.Uint64(at["max_version"]))
			x.recorded = max(x.recorded, c.Int64(at["max_recorded_at"]))
		}
		if err := c.Err(); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	var out []string
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		x := groups[key]
		qs := make([]string, len(x.qualities))
		for i, n := range x.qualities {
			qs[i] = fmt.Sprint(n)
		}
		out = append(out, fmt.Sprintf("%s|%d|%s|%s|%d|%d", key, x.n, series.Decimal(x.sum), strings.Join(qs, ","), x.version, x.recorded))
	}
	return out
}

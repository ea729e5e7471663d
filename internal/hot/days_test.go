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
// crosses, not its readings. on_grid is checked against the Go calendar:
// in the dictionary layout, whose rows a plain client may write off the
// grid, with a reading five minutes off it and two their balancing days do
// not contain (one before, one after); and for hourly gas days around the
// spring clock change, also from the aggregate of days (dayagg.go) with a
// correction dirty beside it.
func TestDaySums(t *testing.T) {
	for _, lay := range dictLayouts {
		t.Run(lay.String(), func(t *testing.T) { testDaySums(t, lay) })
		t.Run(lay.String()+"/gas", func(t *testing.T) { testGasDaySums(t, lay) })
	}
}

func testDaySums(t *testing.T, lay layout) {
	h, pool := dictTier(t, lay)
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
	if lay == layoutDictionary {
		// A winning version dated a day before its own (outside its
		// balancing day), as a plain client may INSERT it: present, not
		// on the grid.
		tag, err := pool.Exec(t.Context(), `INSERT INTO meterstore.sums (series, attr, "from", "to", value, quality, version, recorded_at, balancing_day)
	SELECT series, attr, "from", "to", value, quality, version + 1000, recorded_at, balancing_day - 1
	FROM meterstore.sums WHERE "from" = $1 ORDER BY series, version DESC LIMIT 1`, day.Add(9*time.Hour))
		if err != nil || tag.RowsAffected() != 1 {
			t.Fatalf("a reading outside its day: %v, %v", tag, err)
		}
		// And one dated a day after its own: before its day begins.
		tag, err = pool.Exec(t.Context(), `INSERT INTO meterstore.sums (series, attr, "from", "to", value, quality, version, recorded_at, balancing_day)
	SELECT series, attr, "from", "to", value, quality, version + 1000, recorded_at, balancing_day + 1
	FROM meterstore.sums WHERE "from" = $1 ORDER BY series, version DESC LIMIT 1`, day.Add(10*time.Hour))
		if err != nil || tag.RowsAffected() != 1 {
			t.Fatalf("a reading before its day: %v, %v", tag, err)
		}
	}
	checkDaySums(t, h, tab, day.Add(24*time.Hour+10*time.Hour+15*time.Minute), 3*2*4*2)
}

// testGasDaySums writes hourly gas readings of 28 to 30 March 2026, whose
// gas day of the 28th lasts 23 hours, with corrections, and checks their
// day sums.
func testGasDaySums(t *testing.T, lay layout) {
	h, _ := dictTier(t, lay)
	tab := &series.Table{Name: "gas", TimeModel: series.Interval, Commodity: metering.Gas, Integrity: series.IntegrityStatement,
		Resolutions: []metering.Resolution{metering.Hour}, Width: series.Daily, Headroom: 24 * time.Hour,
		Columns: []series.Column{{Name: "channel", Identity: true, Values: []string{"A", "B"}}, {Name: "source"}, {Name: "seq", Type: series.BigInt}}}
	start := time.Date(2026, 3, 28, 0, 0, 0, 0, time.UTC)
	if err := h.Ensure(t.Context(), tab); err != nil {
		t.Fatal(err)
	}
	if _, err := h.CreatePartitions(t.Context(), tab, start, start.AddDate(0, 0, 2)); err != nil {
		t.Fatal(err)
	}
	var rows, fixes []series.Reading
	for i := range 2 {
		for n := range 72 {
			from := start.Add(time.Duration(n) * time.Hour)
			r := series.Reading{MaLo: malo(i), OBIS: "7-20:3.0.0", From: from, To: from.Add(time.Hour), Value: series.Decimal((i*100 + n) * 1000),
				Unit: metering.CubicMetre, Quality: metering.TrueValue, Resolution: metering.Hour, Version: 10, VersionScope: "9900000000003:2026-03",
				Extra: map[string]string{"channel": "A"}}
			rows = append(rows, r)
			if n%5 == 0 {
				r.Version, r.Value = 11, r.Value+3_000
				fixes = append(fixes, r)
			}
		}
	}
	mustWrite(t, h, tab, rows)
	mustWrite(t, h, tab, fixes)
	// 2 meters × gas days 27 to 30 × 3 partitions, two rows a day.
	checkDaySums(t, h, tab, start.Add(30*time.Hour), 2*4*2)
	// Again from the aggregate of days the first read refreshed, then
	// with a correction of one meter's short gas day dirty beside it.
	checkDaySums(t, h, tab, start.Add(30*time.Hour), 2*4*2)
	for i := range fixes {
		fixes[i].Version, fixes[i].Value = 12, fixes[i].Value+5_000
	}
	mustWrite(t, h, tab, fixes[:len(fixes)/2])
	checkDaySums(t, h, tab, start.Add(30*time.Hour), 2*4*2)
	checkDaySums(t, h, tab, start.Add(30*time.Hour), 2*4*2)
}

// checkDaySums compares the day sums of tab, whole and from lo on, with
// GROUP BY over the winning readings, and counts the rows that cross:
// a sum over every version must differ, and at most most rows may cross.
func checkDaySums(t *testing.T, h *Tier, tab *series.Table, lo time.Time, most int) {
	t.Helper()
	s, r, err := h.OpenSnapshotRead(t.Context(), 2, tab, series.Range{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cols := r.DayColumns()
	if cols == nil {
		t.Fatalf("the %s layout sums no days", r.lay)
	}
	lines := readAll(t, r, true)
	every := readAll(t, r, false)
	for _, lo := range []time.Time{{}, lo} {
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
		// A row a series, day and partition.
		if n := after - before; n == 0 || n > int64(most) {
			t.Fatalf("from %v: %d rows crossed for %d readings", lo, n, len(lines))
		}
	}
}

// daySumsOf groups lines (as readAll renders them) from lo on by series,
// day, sparte, resolution and unit, as daily's lines.
func daySumsOf(t *testing.T, lines []string, lo time.Time) []string {
	t.Helper()
	type tally struct {
		n, grid   int64
		sum       int64
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
		if onGridOf(t, f[4], f[3], f[9], f[13]) {
			x.grid++
		}
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
		out = append(out, fmt.Sprintf("%s|%d|%d|%s|%s|%d|%d", key, x.n, x.grid, series.Decimal(x.sum), strings.Join(qs, ","), x.version, x.recorded))
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
		n, grid   int64
		sum       int64
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
			sum := series.Decimal(c.Int64(at["value_sum"]))
			if c.Null(at["value_sum"]) {
				t.Fatalf("%s: value_sum_text %q, a sum this small crosses at scale 6", key, text("value_sum_text"))
			}
			x.n += c.Int64(at["present"])
			x.grid += c.Int64(at["on_grid"])
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
		out = append(out, fmt.Sprintf("%s|%d|%d|%s|%s|%d|%d", key, x.n, x.grid, series.Decimal(x.sum), strings.Join(qs, ","), x.version, x.recorded))
	}
	return out
}

// onGridOf says whether a reading (from in µs, sparte, resolution and
// balancing day in days since the epoch, as readAll renders them) lies
// on its resolution's grid within its day, by the Go calendar.
func onGridOf(t *testing.T, from, sparte, res, day string) bool {
	t.Helper()
	cal, err := metering.NewCalendar()
	if err != nil {
		t.Fatal(err)
	}
	us, _ := strconv.ParseInt(from, 10, 64)
	days, _ := strconv.ParseInt(day, 10, 64)
	com, err := metering.ParseCommodity(sparte)
	if err != nil {
		t.Fatal(err)
	}
	r, err := metering.ParseResolution(res)
	if err != nil {
		t.Fatal(err)
	}
	u := time.Unix(days*86400, 0).UTC()
	d := metering.Date{Year: u.Year(), Month: u.Month(), Day: u.Day()}
	at, start, end := time.UnixMicro(us), cal.BalancingDayStart(d, com), cal.BalancingDayEnd(d, com)
	if at.Before(start) || !at.Before(end) {
		return false
	}
	if step, ok := r.Fixed(); ok {
		return at.Sub(start)%step == 0
	}
	return r == metering.Day && at.Equal(start)
}

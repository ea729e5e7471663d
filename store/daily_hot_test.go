package store

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// TestDailyHotSums reads daily of a lean table (IntegrityStatement) whose
// days above W PostgreSQL sums: with missing intervals, substitutes, and
// corrections that win and that lose, on both sides of W, daily equals
// GROUP BY over readings, current, as known at a time between the
// corrections (which the engine sums itself), and in an operational read;
// and a current read of daily moves a row a series and partial day from
// the hot tier, not its readings. One hot day's sum is too large for
// numeric(18,6), which crosses as text.
func TestDailyHotSums(t *testing.T) {
	tab := power()
	tab.Integrity = series.IntegrityStatement
	s := newEnv(t).open(t, Options{Tables: []Table{tab}})
	ctx := t.Context()
	var rows, fixes, losers []Reading
	for i := range 3 {
		for d := range 5 {
			for _, ch := range []string{"A", "B"} {
				for slot := range 96 {
					if (i+d+slot)%17 == 0 {
						continue // missing
					}
					r := qh(i, d, slot, ch, 10, int64(1000*i+10*d+slot))
					if i == 1 && d == 4 && ch == "B" {
						// A hot day whose sum numeric(18,6) does not hold.
						r.Value = series.MaxDecimal - 1000 + series.Decimal(slot)
					}
					if slot%9 == 0 {
						r.Quality = metering.Substitute
					}
					rows = append(rows, r)
					if slot%7 == 0 {
						f := r
						f.Version, f.Value, f.Quality = 20, f.Value+500, metering.TrueValue
						fixes = append(fixes, f)
					}
					if slot%11 == 0 {
						l := r
						l.Version, l.Value = 5, l.Value+99
						losers = append(losers, l)
					}
				}
			}
		}
	}
	mustWrite(t, s, rows)
	archiveTo(t, s, dayN(3))
	time.Sleep(2 * time.Millisecond)
	between := time.Now().UTC()
	time.Sleep(2 * time.Millisecond)
	if _, err := s.Write(ctx, "power", fixes); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, "power", losers); err != nil {
		t.Fatal(err)
	}
	const cols = `malo_id, obis_code, channel, CAST(balancing_day AS VARCHAR), sparte, resolution, unit, present, on_grid, CAST(value_sum AS VARCHAR),
	quality_220, quality_67, CAST(max_version AS VARCHAR), epoch_us(max_recorded_at)`
	const oracle = `SELECT ` + cols + ` FROM (SELECT malo_id, obis_code, channel, balancing_day, sparte, resolution, unit, count(*) AS present,
	count(*) FILTER (WHERE "from" >= meter_balancing_day_start(balancing_day, sparte) AND "from" < meter_balancing_day_end(balancing_day, sparte)
		AND (epoch_us("from") - epoch_us(meter_balancing_day_start(balancing_day, sparte))) % 900000000 = 0) AS on_grid,
	CAST(sum(value) AS DECIMAL(38,6)) AS value_sum, count(*) FILTER (WHERE quality = '220') AS quality_220,
	count(*) FILTER (WHERE quality = '67') AS quality_67, max(version) AS max_version, max(recorded_at) AS max_recorded_at
	FROM readings GROUP BY ALL) ORDER BY ALL`
	const daily = `SELECT ` + cols + ` FROM daily ORDER BY ALL`
	for _, c := range []struct {
		name string
		opts ReadOptions
		sums bool // PostgreSQL sums the hot days
	}{
		{"current", ReadOptions{}, true},
		{"known at", ReadOptions{KnownAt: between}, false},
		{"operational", ReadOptions{Mode: ReadOperational}, true},
	} {
		want, err := s.QueryAt(ctx, "power", oracle, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.QueryAt(ctx, "power", daily, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(want.Rows) < 3*2*3 || !slices.EqualFunc(got.Rows, want.Rows, func(a, b []any) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) {
			t.Fatalf("%s: daily has %d rows, GROUP BY over readings %d:\n%v\nwant\n%v", c.name, len(got.Rows), len(want.Rows), got.Rows, want.Rows)
		}
		// The hot tier holds days 3 and 4 (two UTC partitions, three
		// Berlin days): at most 3 meters × 2 channels × 2 partitions × 2
		// days a row.
		if c.sums && (got.Timing.HotRows == 0 || got.Timing.HotRows > 3*2*2*2) {
			t.Fatalf("%s: %d hot rows through daily, %d through readings", c.name, got.Timing.HotRows, want.Timing.HotRows)
		}
		if !c.sums && got.Timing.HotRows < 3*2*2*80 {
			t.Fatalf("%s: %d hot rows through daily: not the readings", c.name, got.Timing.HotRows)
		}
		t.Logf("%s: %d daily rows; hot rows through daily %d, through readings %d", c.name, len(got.Rows), got.Timing.HotRows, want.Timing.HotRows)
	}
}

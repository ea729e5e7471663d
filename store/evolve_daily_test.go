package store

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	icetable "github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/series"
)

// dailyOracleCols are the columns of daily the evolution tests compare
// with GROUP BY over readings.
const dailyOracleCols = `malo_id, obis_code, channel, CAST(balancing_day AS VARCHAR), sparte, resolution, unit, present, on_grid,
	CAST(value_sum AS VARCHAR), quality_220, quality_67, CAST(max_version AS VARCHAR), epoch_us(max_recorded_at)`

// checkDailyIsGroupBy fails t unless daily of power, read through s,
// equals GROUP BY over its readings for every series' day, below and
// above W, with at least minRows rows.
func checkDailyIsGroupBy(t *testing.T, s *Store, what string, minRows int) {
	t.Helper()
	oracle := `SELECT ` + dailyOracleCols + ` FROM (SELECT malo_id, obis_code, channel, balancing_day, sparte, resolution, unit,
	count(*) AS present,
	count(*) FILTER (WHERE "from" >= meter_balancing_day_start(balancing_day, sparte) AND "from" < meter_balancing_day_end(balancing_day, sparte)
		AND (epoch_us("from") - epoch_us(meter_balancing_day_start(balancing_day, sparte))) % 900000000 = 0) AS on_grid,
	CAST(sum(value) AS DECIMAL(38,6)) AS value_sum, count(*) FILTER (WHERE quality = '220') AS quality_220,
	count(*) FILTER (WHERE quality = '67') AS quality_67, max(version) AS max_version, max(recorded_at) AS max_recorded_at
	FROM readings GROUP BY ALL) ORDER BY ALL`
	want := mustQuery(t, s, oracle)
	got := mustQuery(t, s, `SELECT `+dailyOracleCols+` FROM daily ORDER BY ALL`)
	if len(want.Rows) < minRows || !slices.EqualFunc(got.Rows, want.Rows, func(a, b []any) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) {
		t.Fatalf("%s: daily has %d rows, GROUP BY over readings %d (want ≥ %d):\n%v\nwant\n%v", what, len(got.Rows), len(want.Rows), minRows, got.Rows, want.Rows)
	}
}

// rollupFiles returns the number of data files of power's daily rollup
// at its current snapshot, and its metadata location.
func rollupFiles(t *testing.T, e *testEnv) (int, string) {
	t.Helper()
	ice, err := e.cat.LoadTable(t.Context(), icetable.Identifier{"meterstore_daily", "power"})
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := ice.Scan().PlanFiles(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return len(tasks), ice.MetadataLocation()
}

// TestEvolveDailyFollows evolves the declaration of a table with a daily
// rollup: an attribute column added, written with values on both sides
// of W and in a late correction below it, then undeclared. daily equals
// GROUP BY over readings after each step, below and above W; the rollup
// is never rewritten for it (an attribute column is not in the series),
// and a deep verification finds rollup and readings agreeing. Adding or
// dropping an identity column changes the series and the merge key: the
// table is quarantined (series.Evolve), its rollup stays as it was, and
// daily still answers from it and the readings as stored.
func TestEvolveDailyFollows(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	s1 := e.open(t, Options{})
	var rows []Reading
	for i := range 3 {
		for d := range 4 {
			for _, ch := range []string{"A", "B"} {
				for slot := 0; slot < 96; slot += 1 + (i+d)%3 {
					rows = append(rows, qh(i, d, slot, ch, 10, int64(100*i+10*d+slot)))
				}
			}
		}
	}
	mustWrite(t, s1, rows)
	if out, err := s1.Archive(ctx, "power", dayN(4)); err != nil || out.RollupSnapshot == 0 || out.RollupErr != "" { // W = day 2
		t.Fatalf("archive: %+v, %v", out, err)
	}
	checkDailyIsGroupBy(t, s1, "before the evolution", 3*2*3)
	files0, _ := rollupFiles(t, e)

	tariff := series.Column{Name: "tariff", Values: []string{"HT", "NT"}}
	s2 := e.open(t, Options{Tables: []Table{withColumns(tariff)}})
	// A late correction below W and rows above it carry a tariff; one
	// day's rows of a series carry two.
	fix := withTariff(qh(1, 0, 0, "A", 20, 5000), "HT")
	above := []Reading{withTariff(qh(1, 4, 0, "A", 10, 7), "HT"), withTariff(qh(1, 4, 4, "A", 10, 8), "NT"), withTariff(qh(2, 5, 8, "B", 10, 9), "NT")}
	if _, err := s2.Write(ctx, "power", append([]Reading{fix}, above...)); err != nil {
		t.Fatal(err)
	}
	checkDailyIsGroupBy(t, s2, "tariff declared, correction not yet rolled up", 3*2*3)
	out, err := s2.Archive(ctx, "power", dayN(6)) // W = day 4
	if err != nil || out.RollupSnapshot == 0 || out.RollupErr != "" {
		t.Fatalf("archive with the tariff declared: %+v, %v", out, err)
	}
	// Days 2 and 3 and the corrected day: no more than these rows, so
	// no rewrite of every day.
	if out.RollupRows == 0 || out.RollupRows > 3*2*3+2 {
		t.Fatalf("the cycle with the tariff declared wrote %d rollup rows; want the new and corrected days only", out.RollupRows)
	}
	checkDailyIsGroupBy(t, s2, "tariff declared", 3*2*5)

	s3 := e.open(t, Options{})
	mustWrite(t, s3, []Reading{qh(1, 0, 1, "B", 30, 4000), qh(0, 6, 0, "A", 10, 1)})
	checkDailyIsGroupBy(t, s3, "tariff undeclared, correction not yet rolled up", 3*2*5)
	if out, err := s3.Archive(ctx, "power", dayN(7)); err != nil || out.RollupSnapshot == 0 || out.RollupErr != "" || out.RollupRows > 3*2+2 {
		t.Fatalf("archive with the tariff undeclared: %+v, %v", out, err)
	}
	checkDailyIsGroupBy(t, s3, "tariff undeclared", 3*2*5)
	if v := s3.Verify(ctx, VerifyOptions{Deep: true})[0]; !v.OK() || v.RollupDays == 0 || v.RollupBehind {
		t.Fatalf("deep verification after the evolution: %+v", v)
	}
	files1, loc := rollupFiles(t, e)
	if files1 <= files0 {
		t.Fatalf("the rollup has %d files after the evolution, %d before", files1, files0)
	}

	// A new identity column: quarantined, the rollup untouched, daily
	// answers as stored.
	phase := series.Column{Name: "phase", Identity: true}
	s4 := e.open(t, Options{Tables: []Table{withColumns(phase)}})
	if out, err := s4.Archive(ctx, "power", dayN(9)); !errors.As(err, new(*QuarantineError)) || out.Status != ArchiveQuarantined {
		t.Fatalf("archive with a new identity column: %+v, %v", out, err)
	}
	if _, now := rollupFiles(t, e); now != loc {
		t.Fatalf("the rollup moved (%s, was %s) while its table was quarantined", now, loc)
	}
	checkDailyIsGroupBy(t, s3, "identity column added elsewhere", 3*2*5)
}

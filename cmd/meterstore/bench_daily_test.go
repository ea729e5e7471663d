package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/workload/querybench"
	"github.com/meterstore/meterstore/internal/pgtest"
)

// TestBenchDaily runs `bench daily` tiny: both questions answer the same
// through daily and through readings, from a rollup the archival wrote,
// and the JSON carries the speedups and the rollup's size.
func TestBenchDaily(t *testing.T) {
	url := pgtest.NewDB(t)
	path := filepath.Join(t.TempDir(), "daily.json")
	out := mustRun(t, "bench", "daily", "--pg-url", url, "--meters", "20", "--days", "35", "--hot-days", "3",
		"--runs", "1", "--start", "2026-03-01", "--json", path)
	for _, want := range []string{"daily_speedup: ", "B a series-day"} {
		if !strings.Contains(out, want) {
			t.Fatalf("no %q in\n%s", want, out)
		}
	}
	res := readDailyResult(t, path)
	// 35 days from 1 March: the completeness question has a row a day,
	// the monthly one a row a meter and month (March and April).
	if !res.Completeness.Equal || !res.Monthly.Equal || res.Completeness.Rows != 35 || res.Monthly.Rows != 20*2 {
		t.Fatalf("answers: %+v\n%+v", res.Completeness, res.Monthly)
	}
	// The hot days cross summed: at most a row a meter and day (a day W
	// or a partition cuts in two), not 96; none where the engine's copies
	// of the stored sums serve every hot partition.
	for _, q := range []querybench.DailyCase{res.Completeness, res.Monthly} {
		if q.DailyHotRows > 20*(3+1)*2 || q.ReadingsHotRows < 20*3*90 {
			t.Fatalf("%s: %d hot rows through daily, %d through readings", q.Name, q.DailyHotRows, q.ReadingsHotRows)
		}
	}
	if res.RollupRows == 0 || res.RollupFiles == 0 || res.SeriesDays < 20*30 || res.BytesPerSeriesDay <= 0 || res.DailySpeedup <= 0 {
		t.Fatalf("result: %+v", res)
	}
}

// TestBenchDailyReuse runs `bench daily` twice on one --dir: the second
// run asks its questions of the fixture the first one kept (the load and
// archival times it reports are the first run's, the answers alike),
// and a run of another size loads its own.
func TestBenchDailyReuse(t *testing.T) {
	url := pgtest.NewDB(t)
	dir := t.TempDir()
	run := func(meters string) querybench.DailyResult {
		t.Helper()
		path := filepath.Join(t.TempDir(), "daily.json")
		mustRun(t, "bench", "daily", "--pg-url", url, "--dir", dir, "--meters", meters, "--days", "12", "--hot-days", "3",
			"--runs", "1", "--start", "2026-03-01", "--json", path)
		res := readDailyResult(t, path)
		if !res.Completeness.Equal || !res.Monthly.Equal {
			t.Fatalf("answers: %+v\n%+v", res.Completeness, res.Monthly)
		}
		return res
	}
	first := run("10")
	again := run("10")
	if again.LoadSecs != first.LoadSecs || again.ArchiveSecs != first.ArchiveSecs || again.Readings != first.Readings ||
		again.RollupFiles != first.RollupFiles || again.Monthly.Rows != first.Monthly.Rows {
		t.Fatalf("the second run did not reuse the fixture: %+v\nafter %+v", again, first)
	}
	other := run("12")
	if other.LoadSecs == first.LoadSecs || other.Monthly.Rows != 12 || other.Readings <= first.Readings {
		t.Fatalf("a run of 12 meters after one of 10: %+v", other)
	}
}

// readDailyResult reads the JSON result bench daily wrote to path.
func readDailyResult(t *testing.T, path string) querybench.DailyResult {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var res querybench.DailyResult
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

package querybench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/store"
)

// DefaultDailyConfig is the relation daily's benchmark: 5,000 meters'
// quarter hours for 90 Berlin days from 1 January 2026 (three whole
// months), the last 7 days left in PostgreSQL.
func DefaultDailyConfig() Config {
	return Config{Meters: 5_000, Start: metering.Date{Year: 2026, Month: time.January, Day: 1}, Days: 90,
		HotDays: 7, Runs: 5, Threads: 2, MemoryLimit: "4GB", Integrity: "auto"}
}

// A DailyCase is one question asked through daily and through readings.
type DailyCase struct {
	Name        string `json:"name"`
	DailySQL    string `json:"daily_sql"`
	ReadingsSQL string `json:"readings_sql"`
	Rows        int    `json:"rows"`
	// DailyP50 and ReadingsP50 are in milliseconds; Speedup is
	// ReadingsP50 / DailyP50.
	DailyP50    float64 `json:"daily_p50_ms"`
	ReadingsP50 float64 `json:"readings_p50_ms"`
	Speedup     float64 `json:"speedup"`
	// Equal says the two answered alike in every run.
	Equal bool `json:"equal"`
	// DailyHotRows and ReadingsHotRows are the rows the hot tier sent
	// to DuckDB for the question, in the last run: through daily a row a
	// series and day, summed in PostgreSQL.
	DailyHotRows    int64 `json:"daily_hot_rows"`
	ReadingsHotRows int64 `json:"readings_hot_rows"`
	// DailyReadMs and DailyRunMs split daily's time of the last run:
	// reading the tiers (the snapshot, the cold and rollup plans, the
	// views) and computing the result (the scans).
	DailyReadMs float64 `json:"daily_read_ms"`
	DailyRunMs  float64 `json:"daily_run_ms"`
	// DailyHotScanMs is the part of DailyRunMs from the first batch of
	// the hot tier asked for to the last one received: PostgreSQL's sums.
	DailyHotScanMs float64 `json:"daily_hot_scan_ms"`
	// DailySteps is daily's time of the last run by step of
	// query.Timing.Steps, in milliseconds, a step taken twice summed.
	DailySteps map[string]float64 `json:"daily_steps_ms"`
}

// A DailyResult is what RunDaily measured.
type DailyResult struct {
	Config    Config    `json:"config"`
	Readings  int64     `json:"readings"`
	ColdRows  int64     `json:"cold_rows"`
	HotRows   int64     `json:"hot_rows"`
	Watermark time.Time `json:"watermark"`
	// LoadSecs is the fleet's load through the hot tier; ArchiveSecs
	// the archival cycles that moved all but the hot days, the rollup's
	// rows (RollupRows, over RollupSnapshots commits) written in them.
	LoadSecs        float64 `json:"load_secs"`
	ArchiveSecs     float64 `json:"archive_secs"`
	RollupRows      int64   `json:"rollup_rows"`
	RollupSnapshots int     `json:"rollup_snapshots"`
	// RollupBytes is the rollup table's data files, RollupFiles their
	// number, SeriesDays the settled rows daily has (one a series and
	// day), and BytesPerSeriesDay the one over the other.
	RollupBytes       int64   `json:"rollup_bytes"`
	RollupFiles       int     `json:"rollup_files"`
	SeriesDays        int64   `json:"series_days"`
	BytesPerSeriesDay float64 `json:"rollup_bytes_per_series_day"`
	// Completeness is, per day of the fixture, the meters with missing
	// intervals and the intervals present; Monthly every meter's total
	// per month over the fixture's first three months.
	Completeness DailyCase `json:"completeness"`
	Monthly      DailyCase `json:"monthly"`
	// DailySpeedup is the smaller of the two speedups.
	DailySpeedup float64 `json:"daily_speedup"`
}

// RunDaily loads the fleet on the server at url, archives all but the
// last HotDays (the archival writes the rollup in the same cycles), and
// asks both questions through daily and through readings, interleaved run
// by run, checking they agree.
func RunDaily(ctx context.Context, url string, c Config) (*DailyResult, error) {
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Days <= c.HotDays || c.Meters < 1 || c.Runs < 1 {
		return nil, fmt.Errorf("querybench: want more days than hot days, a meter and a run")
	}
	dir := c.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "meterstore-dailybench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	kept, err := keptFixture(dir, c)
	if err != nil {
		return nil, err
	}
	s, _, done, err := open(ctx, url, dir, c, kept == nil)
	if err != nil {
		return nil, err
	}
	defer done()
	cal, err := metering.NewCalendar()
	if err != nil {
		return nil, err
	}
	res := kept
	if res == nil {
		if res, err = loadDaily(ctx, s, cal, c); err != nil {
			return nil, err
		}
	} else {
		fmt.Fprintf(c.Progress, "reusing the fixture kept in %s (loaded in %.0f s, archived in %.1f s then)\n", dir, res.LoadSecs, res.ArchiveSecs)
	}
	res.Config = c
	if c.Dir != "" {
		if err := keepFixture(dir, res); err != nil {
			return nil, err
		}
	}
	st, err := s.Storage(ctx, "power")
	if err != nil {
		return nil, err
	}
	res.ColdRows, res.HotRows = st.ColdRows, st.HotRows
	if res.RollupBytes, res.RollupFiles, err = treeBytes(filepath.Join(dir, "warehouse", "meterstore_daily")); err != nil {
		return nil, err
	}
	r, err := s.Query(ctx, "power", `SELECT count(*) FROM daily WHERE "to" <= `+lit(res.Watermark))
	if err != nil {
		return nil, fmt.Errorf("querybench: series-days: %w", err)
	}
	res.SeriesDays, _ = r.Rows[0][0].(int64)
	if res.SeriesDays > 0 {
		res.BytesPerSeriesDay = float64(res.RollupBytes) / float64(res.SeriesDays)
	}
	if err := measureDaily(ctx, s, cal, c, res); err != nil {
		return nil, err
	}
	return res, nil
}

// loadDaily loads the fleet and archives all but the last HotDays (the
// archival writes the rollup in the same cycles).
func loadDaily(ctx context.Context, s *store.Store, cal *metering.Calendar, c Config) (*DailyResult, error) {
	res := &DailyResult{}
	begin := time.Now()
	var err error
	if res.Readings, err = load(ctx, s, cal, c); err != nil {
		return nil, err
	}
	res.LoadSecs = time.Since(begin).Seconds()
	fmt.Fprintf(c.Progress, "archiving all but the last %d days\n", c.HotDays)
	begin = time.Now()
	now := cal.DayStart(c.Start.AddDays(c.Days))
	for {
		out, err := s.Archive(ctx, "power", now)
		if err != nil {
			return nil, fmt.Errorf("querybench: archive: %w", err)
		}
		if out.RollupErr != "" {
			return nil, fmt.Errorf("querybench: archive: the rollup: %s", out.RollupErr)
		}
		if out.RollupSnapshot != 0 {
			res.RollupSnapshots++
			res.RollupRows += out.RollupRows
		}
		if len(out.Windows) == 0 {
			res.Watermark = out.Watermark
			break
		}
	}
	res.ArchiveSecs = time.Since(begin).Seconds()
	return res, nil
}

// fixtureFile names the file in a kept fixture's directory that records
// what loadDaily measured, written once the archival is done.
const fixtureFile = "daily-fixture.json"

// keepFixture records res's fixture in dir, so that a run with the same
// fixture reuses it.
func keepFixture(dir string, res *DailyResult) error {
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, fixtureFile), b, 0o644); err != nil {
		return fmt.Errorf("querybench: keep the fixture: %w", err)
	}
	return nil
}

// keptFixture returns what loadDaily measured of the fixture kept in dir
// if it is c's (same meters, days, start, hot days and integrity), or nil.
func keptFixture(dir string, c Config) (*DailyResult, error) {
	b, err := os.ReadFile(filepath.Join(dir, fixtureFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("querybench: the kept fixture: %w", err)
	}
	// Removed first: a run that fails before it writes the file again
	// leaves no claim on a fixture it may have changed.
	if err := os.Remove(filepath.Join(dir, fixtureFile)); err != nil {
		return nil, fmt.Errorf("querybench: the kept fixture: %w", err)
	}
	var res DailyResult
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("querybench: the kept fixture: %w", err)
	}
	k := res.Config
	if k.Meters != c.Meters || k.Start != c.Start || k.Days != c.Days || k.HotDays != c.HotDays || k.Integrity != c.Integrity {
		return nil, nil
	}
	return &res, nil
}

// dailyCases returns the two questions over c's days.
func dailyCases(cal *metering.Calendar, c Config) (completeness, monthly DailyCase) {
	first, last := c.Start, c.Start.AddDays(c.Days-1)
	from, to := cal.DayStart(first), cal.DayStart(c.Start.AddDays(c.Days))
	completeness = DailyCase{Name: "per day, the meters with missing intervals and the intervals present",
		DailySQL: fmt.Sprintf(`SELECT balancing_day, count(DISTINCT malo_id) FILTER (WHERE present < expected) AS meters, sum(present) AS present
FROM daily WHERE balancing_day BETWEEN DATE '%s' AND DATE '%s' GROUP BY balancing_day ORDER BY balancing_day`, first, last),
		ReadingsSQL: fmt.Sprintf(`SELECT balancing_day, count(DISTINCT malo_id) FILTER (WHERE n < meter_expected_intervals(balancing_day, resolution, sparte)) AS meters, sum(n) AS present
FROM (SELECT malo_id, obis_code, balancing_day, sparte, resolution, unit, count(*) AS n FROM readings WHERE "from" >= %s AND "from" < %s GROUP BY ALL)
GROUP BY balancing_day ORDER BY balancing_day`, lit(from), lit(to))}
	m0 := metering.Date{Year: c.Start.Year, Month: c.Start.Month, Day: 1}
	m3 := time.Date(m0.Year, m0.Month+3, 1, 0, 0, 0, 0, time.UTC)
	end := metering.Date{Year: m3.Year(), Month: m3.Month(), Day: 1}
	monthly = DailyCase{Name: "every meter's total per month over three months",
		DailySQL: fmt.Sprintf(`SELECT malo_id, CAST(date_trunc('month', balancing_day) AS DATE) AS month, CAST(sum(value_sum) AS DECIMAL(38,6)) AS kwh
FROM daily WHERE balancing_day >= DATE '%s' AND balancing_day < DATE '%s' GROUP BY ALL ORDER BY ALL`, m0, end),
		ReadingsSQL: fmt.Sprintf(`SELECT malo_id, CAST(date_trunc('month', balancing_day) AS DATE) AS month, CAST(sum(value) AS DECIMAL(38,6)) AS kwh
FROM readings WHERE "from" >= %s AND "from" < %s GROUP BY ALL ORDER BY ALL`, lit(cal.DayStart(m0)), lit(cal.DayStart(end)))}
	return completeness, monthly
}

// measureDaily asks each question through daily and through readings,
// one after the other in every run, the first run a warm-up.
func measureDaily(ctx context.Context, s *store.Store, cal *metering.Calendar, c Config, res *DailyResult) error {
	res.Completeness, res.Monthly = dailyCases(cal, c)
	cases := []*DailyCase{&res.Completeness, &res.Monthly}
	times := make([][2][]float64, len(cases))
	for i := range cases {
		cases[i].Equal = true
	}
	for run := range c.Runs + 1 {
		fmt.Fprintf(c.Progress, "\r  run %d/%d   ", run, c.Runs)
		for i, q := range cases {
			var answers [2]string
			for j, sql := range []string{q.DailySQL, q.ReadingsSQL} {
				start := time.Now()
				r, err := s.Query(ctx, "power", sql)
				if err != nil {
					return fmt.Errorf("querybench: %s: %w", q.Name, err)
				}
				if run > 0 {
					times[i][j] = append(times[i][j], ms(time.Since(start)))
				}
				answers[j], q.Rows = fmt.Sprint(r.Rows), len(r.Rows)
				if j == 0 {
					q.DailyHotRows, q.DailyReadMs, q.DailyRunMs = r.Timing.HotRows, ms(r.Timing.Read), ms(r.Timing.Run)
					q.DailyHotScanMs = ms(r.Timing.HotScan)
					q.DailySteps = map[string]float64{}
					for _, st := range r.Timing.Steps {
						q.DailySteps[st.Name] += ms(st.Took)
					}
				} else {
					q.ReadingsHotRows = r.Timing.HotRows
				}
			}
			if answers[0] != answers[1] || q.Rows == 0 {
				q.Equal = false
			}
		}
	}
	fmt.Fprintln(c.Progress)
	for i, q := range cases {
		q.DailyP50, q.ReadingsP50 = percentile(times[i][0], 0.5), percentile(times[i][1], 0.5)
		q.Speedup = q.ReadingsP50 / q.DailyP50
	}
	res.DailySpeedup = min(res.Completeness.Speedup, res.Monthly.Speedup)
	for _, q := range cases {
		if !q.Equal {
			return fmt.Errorf("querybench: %s: daily and readings disagree", q.Name)
		}
	}
	return nil
}

// treeBytes returns the bytes and the number of the Parquet files under
// dir.
func treeBytes(dir string) (int64, int, error) {
	var n int64
	var files int
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".parquet") {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		n += fi.Size()
		files++
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("querybench: the rollup's files: %w", err)
	}
	return n, files, nil
}

// Package querybench measures cross-tier SQL: the archival benchmark's
// fleet loaded, mostly archived, and queried through MeterStore and, for
// the floor, by DuckDB directly on the same Parquet files.
package querybench

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	_ "github.com/duckdb/duckdb-go/v2" // the floor's engine
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/cmd/meterstore/internal/workload/hotbench"
	"github.com/meterstore/meterstore/consensus/postgres"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
	"github.com/meterstore/meterstore/store"
)

// Config describes a run.
type Config struct {
	// Meters deliver quarter hours for Days Berlin days from Start.
	Meters int           `json:"meters"`
	Start  metering.Date `json:"start"`
	Days   int           `json:"days"`
	// HotDays is how many of the last days stay in PostgreSQL: the
	// settlement lag of the archival that moves the rest.
	HotDays int `json:"hot_days"`
	// Runs is how often each query runs after one warm-up run.
	Runs int `json:"runs"`
	// PointRuns is how often each point question, (g) to (j), is asked
	// with one client, and again with two.
	PointRuns int `json:"point_runs"`
	// Threads and MemoryLimit are DuckDB's, for MeterStore and the floor.
	Threads     int    `json:"threads"`
	MemoryLimit string `json:"memory_limit"`
	// Integrity is the table's (see series.ParseIntegrity); auto, the
	// default, gives a new table of quarter hours the lean layout.
	Integrity string `json:"integrity"`
	// Dir holds the warehouse and the query cache; empty means a
	// temporary directory.
	Dir      string       `json:"-"`
	Progress io.Writer    `json:"-"`
	Logger   *slog.Logger `json:"-"`
}

// DefaultConfig is 2,000 meters' quarter hours for 36 Berlin days from 1
// February, with the last 7 days' settlement lag: February is cold, 1
// March to 8 March 23:00 UTC stays in PostgreSQL (1.53M readings and their
// corrections, in the lean layout a new table gets), and a year
// spans both tiers.
func DefaultConfig() Config {
	return Config{Meters: 2_000, Start: metering.Date{Year: 2026, Month: time.February, Day: 1}, Days: 36,
		HotDays: 7, Runs: 20, PointRuns: 200, Threads: 2, MemoryLimit: "4GB", Integrity: "auto"}
}

// A Case is one query measured.
type Case struct {
	Name  string   `json:"name"`
	SQL   string   `json:"sql"`
	Rows  int      `json:"rows"`
	Tiers []string `json:"tiers,omitempty"`
	// P50 and P99 are in milliseconds, over Runs runs.
	P50 float64 `json:"p50_ms"`
	P99 float64 `json:"p99_ms"`
}

// A Result is what a run measured.
type Result struct {
	Config    Config    `json:"config"`
	Readings  int64     `json:"readings"`
	ColdRows  int64     `json:"cold_rows"`
	HotRows   int64     `json:"hot_rows"`
	Watermark time.Time `json:"watermark"`
	// MeterYear is (a), ColdMonth (b), Floor (c) and Plain (d): (c) is
	// (b) run by DuckDB on the same Parquet files without MeterStore, with
	// the window that resolves versions; (d) the same aggregate over every
	// row of those files, without resolving versions.
	MeterYear  Case    `json:"meter_year"`
	ColdMonth  Case    `json:"cold_month"`
	Floor      Case    `json:"floor"`
	Plain      Case    `json:"plain"`
	FloorFiles int     `json:"floor_files"`
	Ratio      float64 `json:"cold_month_vs_floor"`
	PlainRatio float64 `json:"cold_month_vs_plain"`
	// HotDays is (e), every meter's resolved total over the hot days
	// through MeterStore, and Postgres (f) the same aggregate computed by
	// PostgreSQL alone over the same rows; HotRatio is (e)/(f) at p50.
	HotDays  Case    `json:"hot_days"`
	Postgres Case    `json:"postgres"`
	HotRatio float64 `json:"hot_vs_postgres"`
	// HotMoved is the hot rows (e) moved from PostgreSQL into DuckDB.
	HotMoved int64 `json:"hot_rows_moved"`
	// PointSQL (g), PointTyped (h), PointPostgres (i) and PointYear (j)
	// are the small questions: one meter's hot day through SQL, through
	// the typed read, by PostgreSQL alone (prepared, pgx), and one meter's
	// year across both tiers through the typed read. The ratios are (g)/(i)
	// and (h)/(i) at p50, and (h)/(i) in answers per second with two
	// clients.
	PointSQL        PointCase `json:"point_sql"`
	PointTyped      PointCase `json:"point_typed"`
	PointPostgres   PointCase `json:"point_postgres"`
	PointYear       PointCase `json:"point_year_typed"`
	PointSQLRatio   float64   `json:"point_sql_vs_postgres"`
	PointTypedRatio float64   `json:"point_typed_vs_postgres"`
	PointQPSRatio   float64   `json:"point_qps_vs_postgres"`
	// Timing is where (a)'s, (b)'s and (e)'s time goes, p50 of each part
	// in milliseconds, by "a.", "b." or "e." and the part: DuckDB start
	// and analysis, opening the hot snapshot, cold planning, the views
	// over the tiers, computing the result (the scans; the hot rows cross
	// meanwhile, for hot_scan of it), and the rest (reading the result,
	// closing DuckDB); "a.step.", "b.step." or "e.step." and a step of
	// query.Timing.Steps is the p50 of that step. "g.mean." and a step of query.Timing.Steps is the
	// mean time a statement of (g) with one client spent in that step,
	// the warm-up included, over the statements that took it.
	Timing map[string]float64 `json:"timing_ms"`
}

const schema = "meterstore_querybench"

// Run loads the fleet on the server at url, archives all but the last
// HotDays, and measures the queries.
func Run(ctx context.Context, url string, c Config) (*Result, error) {
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Days <= c.HotDays || c.Meters < 1 || c.Runs < 1 || c.PointRuns < 2 {
		return nil, fmt.Errorf("querybench: want more days than hot days, a meter, a run and two point runs")
	}
	dir := c.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "meterstore-querybench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	s, pool, done, err := open(ctx, url, dir, c, true)
	if err != nil {
		return nil, err
	}
	defer done()
	res := &Result{Config: c}
	cal, err := metering.NewCalendar()
	if err != nil {
		return nil, err
	}
	if res.Readings, err = load(ctx, s, cal, c); err != nil {
		return nil, err
	}
	fmt.Fprintf(c.Progress, "archiving all but the last %d days\n", c.HotDays)
	now := cal.DayStart(c.Start.AddDays(c.Days))
	for {
		out, err := s.Archive(ctx, "power", now)
		if err != nil {
			return nil, fmt.Errorf("querybench: archive: %w", err)
		}
		if len(out.Windows) == 0 {
			res.Watermark = out.Watermark
			break
		}
	}
	st, err := s.Storage(ctx, "power")
	if err != nil {
		return nil, err
	}
	res.ColdRows, res.HotRows = st.ColdRows, st.HotRows
	if err := measure(ctx, s, pool, dir, c, res); err != nil {
		return nil, err
	}
	if err := measurePoint(ctx, s, pool, c, res); err != nil {
		return nil, err
	}
	return res, nil
}

// open opens the store of the benchmark's table on the server at url with
// its warehouse and query cache in dir, after removing an earlier run's
// schema, warehouse and cache if fresh.
func open(ctx context.Context, url, dir string, c Config, fresh bool) (*store.Store, *pgxpool.Pool, func(), error) {
	integrity := series.IntegrityAuto
	if c.Integrity != "" {
		i, err := series.ParseIntegrity(c.Integrity)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("querybench: %w", err)
		}
		integrity = i
	}
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, nil, nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg.Copy())
	if err != nil {
		return nil, nil, nil, err
	}
	closers := []func(){pool.Close}
	done := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	fail := func(err error) (*store.Store, *pgxpool.Pool, func(), error) {
		done()
		return nil, nil, nil, fmt.Errorf("querybench: %w", err)
	}
	whDir := filepath.Join(dir, "warehouse")
	if fresh {
		// The catalog lives in the schema: files of an earlier run would
		// be orphans, and counted by the rollup's bytes.
		if _, err := pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			return fail(err)
		}
		for _, d := range []string{whDir, filepath.Join(dir, "cache")} {
			if err := os.RemoveAll(d); err != nil {
				return fail(err)
			}
		}
	}
	if err := os.MkdirAll(whDir, 0o755); err != nil {
		return fail(err)
	}
	wh, err := catalog.OpenWarehouse(ctx, "file://"+whDir)
	if err != nil {
		return fail(err)
	}
	closers = append(closers, func() { wh.Bucket.Close() })
	cat, closeCat, err := store.OpenCatalog(ctx, store.CatalogOptions{Warehouse: wh, Postgres: pcfg,
		LogOptions: postgres.Options{Schema: schema}, Logger: c.Logger})
	if err != nil {
		return fail(err)
	}
	closers = append(closers, closeCat)
	s, err := store.Open(ctx, store.Options{
		Pool: pool, Catalog: cat,
		Tables: []store.Table{{
			Name: "power", TimeModel: series.Interval, Commodity: metering.Electricity,
			Resolutions: []metering.Resolution{metering.QuarterHour},
			Width:       series.Daily, Headroom: 24 * time.Hour, Integrity: integrity,
		}},
		Hot: store.HotOptions{Schema: schema},
		Archive: store.ArchiveOptions{
			SettlementLag:      time.Duration(c.HotDays) * 24 * time.Hour,
			Step:               24 * time.Hour,
			MaxWindowsPerCycle: c.Days + 2,
		},
		Query:  store.QueryOptions{Threads: c.Threads, MemoryLimit: c.MemoryLimit, CacheDir: filepath.Join(dir, "cache")},
		Logger: c.Logger,
	})
	if err != nil {
		return fail(err)
	}
	// Closed first: its DuckDB instances, their spill directories, and
	// the copies of day sums still being written.
	closers = append(closers, s.Close)
	return s, pool, done, nil
}

// load writes the fleet's days through the store, as deliveries would
// arrive, and returns the readings written.
func load(ctx context.Context, s *store.Store, cal *metering.Calendar, c Config) (int64, error) {
	from := cal.DayStart(c.Start).Add(-24 * time.Hour)
	if err := s.CreatePartitions(ctx, from, cal.DayStart(c.Start.AddDays(c.Days))); err != nil {
		return 0, err
	}
	start := time.Now()
	var total int64
	for i := range c.Days {
		d := c.Start.AddDays(i)
		g, err := hotbench.Fixture{Day: d, Meters: c.Meters, CorrectionRate: 0.03, MetersPerBatch: 200,
			Seed: 42 ^ uint64(d.Year*10000+int(d.Month)*100+d.Day)}.Start(cal)
		if err != nil {
			return total, err
		}
		for b := g.Next(); b != nil; b = g.Next() {
			res, err := s.Write(ctx, "power", b)
			if err != nil {
				return total, fmt.Errorf("querybench: write %s: %w", d, err)
			}
			total += int64(res.Inserted + res.Superseded + res.Shadowed)
		}
		el := time.Since(start)
		fmt.Fprintf(c.Progress, "\r  loaded day %d/%d: %d readings, %.0f readings/s, left ~%s   ", i+1, c.Days, total,
			float64(total)/el.Seconds(), time.Duration(float64(el)/float64(i+1)*float64(c.Days-i-1)).Round(time.Second))
	}
	fmt.Fprintln(c.Progress)
	return total, nil
}

// measure runs (a), (b) and the floor (c), interleaved run by run so that
// the machine's state changes affect them alike.
func measure(ctx context.Context, s *store.Store, pool *pgxpool.Pool, dir string, c Config, res *Result) error {
	cal, _ := metering.NewCalendar()
	first, err := firstMeter(ctx, s)
	if err != nil {
		return err
	}
	month := time.Date(c.Start.Year, c.Start.Month, 1, 0, 0, 0, 0, time.UTC)
	monthEnd := month.AddDate(0, 1, 0)
	if monthEnd.After(res.Watermark) {
		return fmt.Errorf("querybench: month %s is not entirely cold (W %s); load more days", month.Format("2006-01"), res.Watermark)
	}
	year := cal.DayStart(metering.Date{Year: c.Start.Year, Month: time.January, Day: 1})
	yearEnd := cal.DayStart(metering.Date{Year: c.Start.Year + 1, Month: time.January, Day: 1})
	res.MeterYear = Case{Name: "(a) one meter's daily totals for a year across both tiers", SQL: fmt.Sprintf(
		`SELECT balancing_day, sum(value) AS kwh FROM readings WHERE malo_id = '%s' AND "from" >= %s AND "from" < %s GROUP BY balancing_day ORDER BY balancing_day`,
		first, lit(year), lit(yearEnd))}
	monthSQL := `SELECT malo_id, sum(value) AS kwh FROM %s WHERE "from" >= %s AND "from" < %s GROUP BY malo_id`
	res.ColdMonth = Case{Name: "(b) every meter's total for one cold month", SQL: fmt.Sprintf(monthSQL, "readings", lit(month), lit(monthEnd))}

	files, err := monthFiles(dir, month)
	if err != nil {
		return err
	}
	res.FloorFiles = len(files)
	quoted := make([]string, len(files))
	for i, f := range files {
		quoted[i] = "'" + f + "'"
	}
	resolved := `(SELECT * FROM read_parquet([` + strings.Join(quoted, ", ") + `], hive_partitioning = false) ` +
		`QUALIFY row_number() OVER (PARTITION BY malo_id, obis_code, "from" ORDER BY version DESC, recorded_at DESC) = 1)`
	res.Floor = Case{Name: "(c) the floor: (b) by DuckDB directly on the same Parquet files", SQL: fmt.Sprintf(monthSQL, resolved, lit(month), lit(monthEnd))}
	plain := `read_parquet([` + strings.Join(quoted, ", ") + `], hive_partitioning = false)`
	res.Plain = Case{Name: "(d) (c) without resolving versions: every row", SQL: fmt.Sprintf(monthSQL, plain, lit(month), lit(monthEnd))}
	res.HotDays = Case{Name: "(e) every meter's total over the hot days", SQL: fmt.Sprintf(
		`SELECT malo_id, sum(value) AS kwh, count(*) AS n FROM readings WHERE "from" >= %s GROUP BY malo_id`, lit(res.Watermark))}
	if res.Postgres.SQL, err = postgresSQL(ctx, pool, res.Watermark); err != nil {
		return err
	}
	res.Postgres.Name = "(f) (e) by PostgreSQL alone on the same rows"
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	for _, set := range []string{fmt.Sprintf("SET threads = %d", c.Threads), "SET memory_limit = '" + c.MemoryLimit + "'", "SET TimeZone = 'UTC'"} {
		if _, err := db.ExecContext(ctx, set); err != nil {
			return fmt.Errorf("querybench: floor: %s: %w", set, err)
		}
	}
	times := make([][]float64, 6)
	parts := map[string][]float64{}
	var sums [2]string
	var hotSums [2]string
	for run := range c.Runs + 1 {
		fmt.Fprintf(c.Progress, "\r  run %d/%d   ", run, c.Runs)
		for i, q := range []*Case{&res.MeterYear, &res.ColdMonth, &res.HotDays} {
			name := []string{"a", "b", "e"}[i]
			start := time.Now()
			r, err := s.Query(ctx, "power", q.SQL)
			if err != nil {
				return fmt.Errorf("querybench: %s: %w", q.Name, err)
			}
			el := time.Since(start)
			times[[]int{0, 1, 4}[i]] = append(times[[]int{0, 1, 4}[i]], ms(el))
			q.Rows, q.Tiers = len(r.Rows), r.Tiers
			if run > 0 {
				tm := r.Timing
				for k, d := range map[string]time.Duration{"open": tm.Open, "hot_open": tm.Hot, "hot_scan": tm.HotScan, "cold_plan": tm.Plan,
					"views": tm.Read - tm.Hot - tm.Plan, "run": tm.Run, "rest": el - tm.Open - tm.Read - tm.Run} {
					parts[name+"."+k] = append(parts[name+"."+k], ms(d))
				}
				took := map[string]time.Duration{}
				for _, st := range tm.Steps {
					took[st.Name] += st.Took
				}
				for k, d := range took {
					parts[name+".step."+k] = append(parts[name+".step."+k], ms(d))
				}
			}
			switch name {
			case "b":
				sums[0] = total(r.Rows)
			case "e":
				hotSums[0] = total(r.Rows) + "/" + count(r.Rows)
				res.HotMoved = r.Timing.HotRows
			}
		}
		start := time.Now()
		prows, err := postgresRows(ctx, pool, res.Postgres.SQL)
		if err != nil {
			return fmt.Errorf("querybench: %s: %w", res.Postgres.Name, err)
		}
		times[5] = append(times[5], ms(time.Since(start)))
		res.Postgres.Rows, hotSums[1] = len(prows), total(prows)+"/"+count(prows)
		start = time.Now()
		rows, n, err := floorRows(ctx, db, res.Floor.SQL)
		if err != nil {
			return fmt.Errorf("querybench: floor: %w", err)
		}
		times[2] = append(times[2], ms(time.Since(start)))
		res.Floor.Rows, sums[1] = n, total(rows)
		start = time.Now()
		if _, res.Plain.Rows, err = floorRows(ctx, db, res.Plain.SQL); err != nil {
			return fmt.Errorf("querybench: plain: %w", err)
		}
		times[3] = append(times[3], ms(time.Since(start)))
	}
	fmt.Fprintln(c.Progress)
	if sums[0] != sums[1] || res.ColdMonth.Rows != res.Floor.Rows {
		return fmt.Errorf("querybench: MeterStore and the floor disagree: %d rows totalling %s against %d totalling %s",
			res.ColdMonth.Rows, sums[0], res.Floor.Rows, sums[1])
	}
	if hotSums[0] != hotSums[1] || res.HotDays.Rows != res.Postgres.Rows {
		return fmt.Errorf("querybench: MeterStore and PostgreSQL disagree on the hot days: %d rows totalling %s against %d totalling %s",
			res.HotDays.Rows, hotSums[0], res.Postgres.Rows, hotSums[1])
	}
	for i, q := range []*Case{&res.MeterYear, &res.ColdMonth, &res.Floor, &res.Plain, &res.HotDays, &res.Postgres} {
		t := times[i][1:] // the first run warms the caches
		q.P50, q.P99 = percentile(t, 0.50), percentile(t, 0.99)
	}
	res.Timing = map[string]float64{}
	for k, v := range parts {
		res.Timing[k] = percentile(v, 0.50)
	}
	res.Ratio = res.ColdMonth.P50 / res.Floor.P50
	res.PlainRatio = res.ColdMonth.P50 / res.Plain.P50
	res.HotRatio = res.HotDays.P50 / res.Postgres.P50
	return nil
}

// postgresSQL returns (f): the resolved aggregate of (e) as PostgreSQL
// computes it alone, from the table's relations in the hot tier. In the
// dictionary layout, the newest version per (series, from) comes out of
// the primary key's order and the series' market locations from their
// dictionary; in the rows layout, per merge key.
func postgresSQL(ctx context.Context, pool *pgxpool.Pool, w time.Time) (string, error) {
	var dict bool
	err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, schema+".power_series").Scan(&dict)
	if err != nil {
		return "", fmt.Errorf("querybench: %w", err)
	}
	if dict {
		// The step layout stores from as quarter hours since 1970.
		var step bool
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'step' AND NOT attisdropped)`,
			schema+".power").Scan(&step); err != nil {
			return "", fmt.Errorf("querybench: %w", err)
		}
		from, bound := `"from"`, lit(w)
		if step {
			from, bound = `step`, fmt.Sprintf(`ceil(extract(epoch FROM %s::timestamptz) / 900)::int8`, lit(w))
		}
		return fmt.Sprintf(`SELECT s.malo_id, sum(r.value) AS kwh, count(*) AS n FROM (SELECT DISTINCT ON (series, %[3]s) series, value FROM %[1]s.power WHERE %[3]s >= %[2]s ORDER BY series, %[3]s, version DESC) r JOIN %[1]s.power_series s ON s.id = r.series GROUP BY s.malo_id`,
			schema, bound, from), nil
	}
	return fmt.Sprintf(`SELECT malo_id, sum(value) AS kwh, count(*) AS n FROM (SELECT DISTINCT ON (malo_id, obis_code, "from") malo_id, value FROM %s.power WHERE "from" >= %s ORDER BY malo_id, obis_code, "from", version DESC, recorded_at DESC) r GROUP BY malo_id`,
		schema, lit(w)), nil
}

// postgresRows runs q on PostgreSQL and returns its rows: market
// location, total as text, count.
func postgresRows(ctx context.Context, pool *pgxpool.Pool, q string) ([][]any, error) {
	rows, err := pool.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		var (
			m string
			v pgtype.Numeric
			n int64
		)
		if err := rows.Scan(&m, &v, &n); err != nil {
			return nil, err
		}
		text, err := v.Value()
		if err != nil {
			return nil, err
		}
		out = append(out, []any{m, text, n})
	}
	return out, rows.Err()
}

// count sums the third column of rows.
func count(rows [][]any) string {
	var n int64
	for _, r := range rows {
		switch v := r[2].(type) {
		case int64:
			n += v
		default:
			return fmt.Sprintf("not a count: %T", r[2])
		}
	}
	return fmt.Sprint(n)
}

func firstMeter(ctx context.Context, s *store.Store) (string, error) {
	r, err := s.Query(ctx, "power", `SELECT min(malo_id) FROM readings_versions WHERE "from" >= TIMESTAMPTZ '2026-02-01 00:00:00+00' AND "from" < TIMESTAMPTZ '2026-02-02 00:00:00+00'`)
	if err != nil {
		return "", fmt.Errorf("querybench: %w", err)
	}
	m, _ := r.Rows[0][0].(string)
	return m, nil
}

// monthFiles lists the table's data files of month, from the warehouse's
// partition directories: what an engine without MeterStore would read.
func monthFiles(dir string, month time.Time) ([]string, error) {
	// Under the month, files sit in a directory per value of superseded.
	pattern := filepath.Join(dir, "warehouse", "meterstore", "power", "data", "from_month="+month.Format("2006-01"), "*", "*.parquet")
	files, err := filepath.Glob(pattern)
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("no file matches %s", pattern)
	}
	if err != nil {
		return nil, fmt.Errorf("querybench: floor files: %w", err)
	}
	return files, nil
}

func floorRows(ctx context.Context, db *sql.DB, q string) ([][]any, int, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		var m, v any
		if err := rows.Scan(&m, &v); err != nil {
			return nil, 0, err
		}
		out = append(out, []any{m, v})
	}
	return out, len(out), rows.Err()
}

// total sums the second column of rows as text, exactly.
func total(rows [][]any) string {
	var sum series.Decimal
	for _, r := range rows {
		d, err := series.ParseDecimal(fmt.Sprint(r[1]))
		if err != nil {
			return "unparseable " + fmt.Sprint(r[1])
		}
		sum += d
	}
	return sum.String()
}

func lit(t time.Time) string {
	return "TIMESTAMPTZ '" + t.UTC().Format("2006-01-02 15:04:05") + "+00'"
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// percentile returns the p-th percentile of xs by the nearest rank.
func percentile(xs []float64, p float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

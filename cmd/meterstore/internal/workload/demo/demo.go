// Package demo is MeterStore's end-to-end demonstration: a private
// PostgreSQL, a local Iceberg warehouse, a power and a gas table, a fleet
// of meters delivering for months with corrections, and archival cycles
// driven by a simulated clock.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/consensus/postgres"
	"github.com/meterstore/meterstore/internal/pgcluster"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
	"github.com/meterstore/meterstore/store"
)

// Config describes a demo run.
type Config struct {
	// Dir holds the demo's PostgreSQL cluster (Dir/pg) and warehouse
	// (Dir/warehouse). A directory left by an earlier demo is replaced; any
	// other non-empty directory is refused.
	Dir string
	// PGURL, if set, is used instead of a private cluster.
	PGURL string
	// Meters is the number of power meters; a quarter as many gas meters.
	Meters int
	// Days is the number of Berlin days delivered. They end with the last
	// day whose deliveries have arrived by Now (each day's arrive at 06:00
	// the morning after), so the simulated clock ends at most a day before
	// Now and the deployment the demo leaves is current.
	Days int
	// Now is the time the demo ends at; zero means the clock. Tests set
	// it to stay deterministic.
	Now time.Time
	// Listen is the address meterstore serve listens on in the
	// configuration the demo leaves; the commands it prints to try next
	// use it.
	Listen string
	// Out receives the report, Progress the progress display.
	Out, Progress io.Writer
	Logger        *slog.Logger
}

// DefaultConfig is 1,000 power meters and 250 gas meters over the 90
// days up to now. They cross a clock change, and the demo shows its 23- or
// 25-hour gas day, when they end between late March and late June or
// between late October and late January; otherwise the demo says so.
func DefaultConfig() Config {
	return Config{
		Dir:    "meterstore-demo",
		Meters: 1000,
		Days:   90,
		Listen: "127.0.0.1:8080",
	}
}

// arrival is when a day's deliveries arrive: 06:00 Berlin time the morning
// after.
const arrival = 6 * time.Hour

// days returns the first and last of n Berlin days delivered by now: the
// last is the latest day whose deliveries have arrived.
func days(cal *metering.Calendar, now time.Time, n int) (first, last metering.Date) {
	last = cal.LocalDay(now)
	for cal.DayEnd(last).Add(arrival).After(now) {
		last = last.AddDays(-1)
	}
	return last.AddDays(1 - n), last
}

// marker names the file that says a directory holds a demo.
const marker = ".meterstore-demo"

// schema is the PostgreSQL schema of the demo's tables and log.
const schema = "meterstore_demo"

// prepare empties an earlier demo's directory, or refuses a foreign one.
func prepare(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	case len(entries) == 0:
	default:
		if _, err := os.Stat(filepath.Join(dir, marker)); err != nil {
			return fmt.Errorf("demo: %s is not empty and holds no earlier demo; choose another --dir", dir)
		}
		inUse, err := pgcluster.InUse(filepath.Join(dir, "pg"))
		if err != nil {
			return err
		}
		if inUse {
			return fmt.Errorf("demo: the earlier demo's PostgreSQL in %s is in use by another command, such as meterstore serve; "+
				"stop it first, or choose another --dir", filepath.Join(dir, "pg"))
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, marker), []byte("created by meterstore demo\n"), 0o644)
}

// open opens the demo's store on the server at url: the catalog's log in
// the same database, the warehouse in cfg.Dir/warehouse. It returns the
// store's pool too.
func open(ctx context.Context, cfg Config, url string, log *slog.Logger) (*store.Store, *pgxpool.Pool, func(), error) {
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, nil, nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, nil, nil, err
	}
	closers := []func(){pool.Close}
	done := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	fail := func(err error) (*store.Store, *pgxpool.Pool, func(), error) { done(); return nil, nil, nil, err }

	// Everything the demo keeps in PostgreSQL lives in a schema of its own,
	// which a new demo drops: the warehouse it described is gone too.
	if _, err := pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
		return fail(err)
	}
	whDir := filepath.Join(cfg.Dir, "warehouse")
	if err := os.MkdirAll(whDir, 0o755); err != nil {
		return fail(err)
	}
	wh, err := catalog.OpenWarehouse(ctx, "file://"+whDir)
	if err != nil {
		return fail(err)
	}
	closers = append(closers, func() { wh.Bucket.Close() })
	cat, closeCat, err := store.OpenCatalog(ctx, store.CatalogOptions{Warehouse: wh, Postgres: pcfg,
		LogOptions: postgres.Options{Schema: schema}, Logger: log})
	if err != nil {
		return fail(err)
	}
	closers = append(closers, closeCat)
	s, err := store.Open(ctx, store.Options{
		Pool:    pool,
		Catalog: cat,
		Tables:  tables(),
		Hot:     store.HotOptions{Schema: schema},
		Archive: store.ArchiveOptions{
			SettlementLag: 14 * 24 * time.Hour, // MSCONS corrections arrive for weeks
			Step:          24 * time.Hour,
			ReaderGrace:   24 * time.Hour,
		},
		Query:  store.QueryOptions{Threads: 2, MemoryLimit: "1GB", CacheDir: filepath.Join(cfg.Dir, "cache")},
		Logger: log,
	})
	if err != nil {
		return fail(err)
	}
	// Closed first: its DuckDB instances, their spill directories, and
	// the copies of day sums still being written.
	closers = append(closers, s.Close)
	return s, pool, done, nil
}

// tables declares a power and a gas table.
func tables() []store.Table {
	return []store.Table{
		{
			Name: "power", TimeModel: series.Interval, Commodity: metering.Electricity,
			Resolutions: []metering.Resolution{metering.QuarterHour},
			Width:       series.Daily, Headroom: 3 * 24 * time.Hour,
			// Left to the hot tier: integrity statement, checked by
			// PostgreSQL per statement rather than per row.
		},
		{
			Name: "gas", TimeModel: series.Interval, Commodity: metering.Gas,
			Resolutions: []metering.Resolution{metering.Day},
			Width:       series.Daily, Headroom: 3 * 24 * time.Hour,
		},
	}
}

// Run runs the demo, writes its report to cfg.Out and returns it.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	if cfg.Meters < 4 || cfg.Days < 1 {
		return nil, fmt.Errorf("demo: want at least 4 meters and 1 day")
	}
	if cfg.Now.IsZero() {
		cfg.Now = time.Now()
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	cfg.Dir = dir
	if err := prepare(dir); err != nil {
		return nil, err
	}
	url := cfg.PGURL
	var cluster *pgcluster.Cluster
	if url == "" {
		fmt.Fprintf(cfg.Out, "starting PostgreSQL in %s\n", filepath.Join(dir, "pg"))
		cluster, err = pgcluster.Start(ctx, pgcluster.Options{Dir: filepath.Join(dir, "pg"), Logger: log})
		if err != nil {
			return nil, err
		}
		defer cluster.Stop(context.Background())
		url = cluster.URL("postgres")
	}
	s, pool, done, err := open(ctx, cfg, url, log)
	if err != nil {
		return nil, err
	}
	defer done()
	cal, err := metering.NewCalendar()
	if err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg, s: s, cal: cal, fleet: fleet{cal: cal, meters: cfg.Meters, seed: 42}}
	r.first, r.last = days(cal, cfg.Now, cfg.Days)
	fmt.Fprintf(cfg.Out, "delivering %s to %s (%d days), each day's values at 06:00 the morning after\n", r.first, r.last, cfg.Days)
	if err := r.run(ctx); err != nil {
		return nil, err
	}
	// The clock catches up with now: partitions ahead of it, as the
	// maintenance loop keeps them, so that status finds the deployment
	// healthy right after the demo.
	if err := s.EnsurePartitions(ctx, cfg.Now); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	// Months delivered in minutes leave autovacuum every hot partition to
	// vacuum at once, in the seconds the queries below run and are timed
	// (seen: all 14 of power's while its monthly totals ran). They are
	// vacuumed first, as autovacuum would have done day by day.
	if _, err := pool.Exec(ctx, "VACUUM (ANALYZE) "+schema+".power, "+schema+".gas"); err != nil {
		return nil, fmt.Errorf("demo: vacuum the hot tier: %w", err)
	}
	rep, err := r.report(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.queries(ctx); err != nil {
		return nil, err
	}
	if cfg.Listen == "" {
		cfg.Listen = DefaultConfig().Listen
	}
	tok, hash, err := config.NewToken()
	if err != nil {
		return nil, err
	}
	cfgPath, err := writeConfig(dir, cfg.PGURL, cfg.Listen, hash)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(cfg.Out, "\nThe data is in %s: PostgreSQL in pg/, the Iceberg warehouse in warehouse/,\n"+
		"the deployment's configuration in %s. Try next, from this directory:\n", dir, configName)
	fmt.Fprintf(cfg.Out, "\n1. Query both tiers (the SQL may also come from - or @file.sql):\n"+
		"  go run ./cmd/meterstore query -c %s --table power \"SELECT malo_id, sum(value) AS kwh FROM readings GROUP BY malo_id ORDER BY kwh DESC LIMIT 5\"\n", cfgPath)
	fmt.Fprintf(cfg.Out, "\n2. Serve the HTTP API, the dashboard and the maintenance loop (Ctrl-C stops it) with the\n"+
		"demo's token %s (the configuration keeps only its hash); then, in\n"+
		"another terminal, ask for the status, or open http://%s/ and log in with the token:\n"+
		"  go run ./cmd/meterstore serve -c %s\n"+
		"  curl -sS -H 'Authorization: Bearer %s' http://%s/v1/status\n", tok, cfg.Listen, cfgPath, tok, cfg.Listen)
	fmt.Fprintf(cfg.Out, "\n3. Read the cold tier without MeterStore, with PyIceberg (pip install pyiceberg pyarrow):\n"+
		"  python3 -c \"from pyiceberg.table import StaticTable; t = StaticTable.from_metadata('%s'); print(t.scan().to_arrow().num_rows)\"\n",
		filepath.Join(dir, "warehouse", "meterstore", "power"))
	return rep, nil
}

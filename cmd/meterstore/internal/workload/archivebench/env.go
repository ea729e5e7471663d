// Package archivebench measures the archiver on realistic power load
// profiles: the storage a reading takes in the cold tier against the hot
// tier's PostgreSQL partitions, and the throughput and peak memory of one
// archival cycle for windows of different sizes.
package archivebench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/cmd/meterstore/internal/workload/hotbench"
	"github.com/meterstore/meterstore/consensus/postgres"
	"github.com/meterstore/meterstore/internal/archive"
	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
	"github.com/meterstore/meterstore/store"
)

// Fixture describes the readings loaded into the hot tier: quarter-hour
// load profiles of Meters meters for Days Berlin days from Start, a share of
// the meter-days delivered again as corrections under a higher version.
type Fixture struct {
	Meters         int           `json:"meters"`
	Days           int           `json:"days"`
	Start          metering.Date `json:"start"`
	CorrectionRate float64       `json:"correction_rate"`
	// MetersPerBatch is the number of meter-days per hot-tier write.
	MetersPerBatch int    `json:"meters_per_batch"`
	Seed           uint64 `json:"seed"`
}

// DefaultFixture is 10,000 meters over 30 days from 1 February 2026 (no
// clock change), 3% of the meter-days corrected, written 200 meter-days at
// a time.
func DefaultFixture() Fixture {
	return Fixture{
		Meters:         10_000,
		Days:           30,
		Start:          metering.Date{Year: 2026, Month: time.February, Day: 1},
		CorrectionRate: 0.03,
		MetersPerBatch: 200,
		Seed:           42,
	}
}

func (f Fixture) validate() error {
	if f.Meters < 1 || f.Days < 1 || f.MetersPerBatch < 1 || !f.Start.IsValid() ||
		f.CorrectionRate < 0 || f.CorrectionRate >= 1 {
		return fmt.Errorf("archivebench: invalid fixture %+v", f)
	}
	return nil
}

// powerTable is the declared table the benchmark archives. Its integrity
// is left to Write, for load speed.
func powerTable() *series.Table {
	return &series.Table{
		Name: "power", TimeModel: series.Interval, Commodity: metering.Electricity,
		Resolutions: []metering.Resolution{metering.QuarterHour},
		Width:       series.Daily, Headroom: 3 * 24 * time.Hour,
		Integrity: series.IntegrityWrite,
	}
}

// env is a hot and a cold tier with the power table declared in both, in
// a PostgreSQL schema and a local warehouse of their own.
type env struct {
	pool   *pgxpool.Pool
	pcfg   *pgxpool.Config
	hot    *hot.Tier
	cold   *cold.Tier
	cal    *metering.Calendar
	table  *series.Table
	ctable *cold.Table
	log    *slog.Logger
	closer []func()
}

// openEnv opens schema on the server at url and a warehouse in dir, or in
// a temporary directory removed by close if dir is empty. If fresh, it
// drops and recreates the schema first; otherwise it opens what an earlier
// env left.
func openEnv(ctx context.Context, url, schema, dir string, fresh bool, log *slog.Logger) (_ *env, err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &env{log: log, table: powerTable()}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	if e.pcfg, err = pgxpool.ParseConfig(url); err != nil {
		return nil, fmt.Errorf("archivebench: %w", err)
	}
	if e.pool, err = pgxpool.NewWithConfig(ctx, e.pcfg.Copy()); err != nil {
		return nil, fmt.Errorf("archivebench: connect: %w", err)
	}
	e.closer = append(e.closer, e.pool.Close)
	if fresh {
		if _, err = e.pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			return nil, fmt.Errorf("archivebench: drop schema %s: %w", schema, err)
		}
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "meterstore-archivebench-"); err != nil {
			return nil, fmt.Errorf("archivebench: %w", err)
		}
		tmp := dir
		e.closer = append(e.closer, func() { os.RemoveAll(tmp) })
	} else {
		if dir, err = filepath.Abs(dir); err != nil {
			return nil, fmt.Errorf("archivebench: %w", err)
		}
		if err = os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("archivebench: %w", err)
		}
	}
	wh, err := catalog.OpenWarehouse(ctx, "file://"+dir)
	if err != nil {
		return nil, fmt.Errorf("archivebench: warehouse %s: %w", dir, err)
	}
	e.closer = append(e.closer, func() { wh.Bucket.Close() })
	cat, closeCat, err := store.OpenCatalog(ctx, store.CatalogOptions{Warehouse: wh, Postgres: e.pcfg,
		LogOptions: postgres.Options{Schema: schema}, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("archivebench: catalog: %w", err)
	}
	e.closer = append(e.closer, closeCat)
	if e.hot, err = hot.New(e.pool, hot.Options{Schema: schema, Logger: log}); err != nil {
		return nil, fmt.Errorf("archivebench: %w", err)
	}
	if e.cold, err = cold.New(cat, cold.Options{Logger: log}); err != nil {
		return nil, fmt.Errorf("archivebench: %w", err)
	}
	if e.cal, err = metering.NewCalendar(); err != nil {
		return nil, fmt.Errorf("archivebench: %w", err)
	}
	if err = e.hot.Ensure(ctx, e.table); err != nil {
		return nil, fmt.Errorf("archivebench: declare %s in the hot tier: %w", e.table.Name, err)
	}
	if e.ctable, err = e.cold.Ensure(ctx, e.table); err != nil {
		return nil, fmt.Errorf("archivebench: declare %s in the cold tier: %w", e.table.Name, err)
	}
	return e, nil
}

// close releases what openEnv acquired, in reverse order.
func (e *env) close() {
	for i := len(e.closer) - 1; i >= 0; i-- {
		e.closer[i]()
	}
	e.closer = nil
}

// archiver returns an archiver of the env's tiers with cfg and its logger.
func (e *env) archiver(cfg archive.Config) (*archive.Archiver, error) {
	cfg.Logger = e.log
	a, err := archive.New(e.hot, e.cold, e.pool, cfg)
	if err != nil {
		return nil, fmt.Errorf("archivebench: %w", err)
	}
	return a, nil
}

// span returns the hot partitions' range that holds the fixture's days:
// from the UTC day of the first Berlin day's start to the end of the UTC
// day of the last one's end.
func (e *env) span(f Fixture) (from, to time.Time) {
	first := e.cal.DayStart(f.Start)
	last := e.cal.DayEnd(f.Start.AddDays(f.Days - 1))
	from = e.table.Width.Start(first)
	to = e.table.Width.Start(last)
	if !to.Equal(last) {
		to = e.table.Width.Next(to)
	}
	return from, to
}

// load creates the partitions of the fixture's days and writes its
// readings through the hot tier, day by day in batches, reporting progress
// to w. It returns the readings written.
func (e *env) load(ctx context.Context, f Fixture, w io.Writer) (int64, error) {
	if err := f.validate(); err != nil {
		return 0, err
	}
	from, to := e.span(f)
	if _, err := e.hot.CreatePartitions(ctx, e.table, from, to.Add(-time.Nanosecond)); err != nil {
		return 0, fmt.Errorf("archivebench: partitions of %s: %w", e.table.Name, err)
	}
	if w == nil {
		w = io.Discard
	}
	start := time.Now()
	var total int64
	for i := range f.Days {
		d := f.Start.AddDays(i)
		g, err := hotbench.Fixture{
			Day: d, Meters: f.Meters, CorrectionRate: f.CorrectionRate, MetersPerBatch: f.MetersPerBatch,
			// The per-meter value streams differ from day to day.
			Seed: f.Seed ^ uint64(d.Year*10000+int(d.Month)*100+d.Day),
		}.Start(e.cal)
		if err != nil {
			return total, fmt.Errorf("archivebench: fixture of %s: %w", d, err)
		}
		for b := g.Next(); b != nil; b = g.Next() {
			res, err := e.hot.Write(ctx, e.table, b)
			if err != nil {
				return total, fmt.Errorf("archivebench: write %s: %w", d, err)
			}
			total += int64(res.Inserted + res.Superseded + res.Shadowed)
		}
		el := time.Since(start)
		left := time.Duration(float64(el) / float64(i+1) * float64(f.Days-i-1))
		fmt.Fprintf(w, "\r  loaded day %d/%d (%s): %d readings, %.0f readings/s, elapsed %s, left ~%s   ",
			i+1, f.Days, d, total, float64(total)/el.Seconds(), el.Round(time.Second), left.Round(time.Second))
	}
	fmt.Fprintln(w)
	return total, nil
}

// pgStorage returns the rows of the table and the size of its partition
// tree, heap and TOAST and indexes, as pg_total_relation_size counts them.
func (e *env) pgStorage(ctx context.Context) (rows, total, heap, indexes int64, err error) {
	parent := pgx.Identifier{e.hot.Schema(), e.table.Name}.Sanitize()
	err = e.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+parent+`),
	coalesce(sum(pg_total_relation_size(relid)), 0)::bigint,
	coalesce(sum(pg_table_size(relid)), 0)::bigint,
	coalesce(sum(pg_indexes_size(relid)), 0)::bigint
FROM pg_partition_tree($1::regclass)`, parent).Scan(&rows, &total, &heap, &indexes)
	if err != nil {
		return 0, 0, 0, 0, fmt.Errorf("archivebench: size of %s: %w", parent, err)
	}
	return rows, total, heap, indexes, nil
}

// serverVersion returns the server's version string.
func (e *env) serverVersion(ctx context.Context) string {
	var v string
	if err := e.pool.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
		return "unknown"
	}
	return v
}

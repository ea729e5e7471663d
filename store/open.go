package store

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx" for iceberg-go's SQL catalog
	"go.opentelemetry.io/otel/metric"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/internal/metrics"
	"github.com/meterstore/meterstore/internal/pgcluster"
	"github.com/meterstore/meterstore/privacy"
)

// OpenConfig opens the deployment cfg describes: the PostgreSQL server at
// postgres.url, or the private one in data_dir/pg, which it starts (from
// the installed binaries, or packaged ones where none are installed) or
// joins when another process runs it; the warehouse; the catalog's log in
// PostgreSQL or on the warehouse; the subject registry; and every
// declared table. Close releases what it started, and the private server
// if no other process uses it. Each of with adjusts the options after they
// are derived from cfg, such as WithMeters.
//
// The hot tier's connections are two pools on postgres.url: one for
// writes, archival and SQL reads, and one reserved for the typed series
// reads, so that ingest's COPYs, which hold a connection each for a whole
// batch, cannot make a portal's small reads wait for one. Each has the
// URL's pool_max_conns connections, pgx's default (the larger of 4 and
// the CPUs) where it names none. The series reads' connections run their
// prepared statements on generic plans (hot.GenericPlans).
func OpenConfig(ctx context.Context, cfg *config.Config, log *slog.Logger, with ...ConfigOption) (_ *Store, err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var closers []func()
	defer func() {
		if err != nil {
			closeAll(closers)
		}
	}()
	pgURL := cfg.Postgres.URL
	var private *privateServer
	if pgURL == "" {
		cl, err := pgcluster.Start(ctx, pgcluster.Options{Dir: filepath.Join(cfg.Postgres.DataDir, "pg"), Logger: log})
		if err != nil {
			return nil, fmt.Errorf("store: private PostgreSQL in %s: %w", cfg.Postgres.DataDir, err)
		}
		closers = append(closers, func() { cl.Stop(context.WithoutCancel(ctx)) })
		pgURL = cl.URL("postgres")
		private = &privateServer{bin: cl.BinDir(), packaged: cl.Packaged()}
	}
	pcfg, err := pgxpool.ParseConfig(pgURL)
	if err != nil {
		return nil, fmt.Errorf("store: postgres.url: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg.Copy())
	if err != nil {
		return nil, fmt.Errorf("store: connect: %w", err)
	}
	closers = append(closers, pool.Close)
	rcfg := pcfg.Copy()
	hot.GenericPlans(rcfg)
	reads, err := pgxpool.NewWithConfig(ctx, rcfg)
	if err != nil {
		return nil, fmt.Errorf("store: connect the series reads: %w", err)
	}
	closers = append(closers, reads.Close)
	if err := localWarehouse(cfg.Warehouse.URL); err != nil {
		return nil, err
	}
	wh, err := catalog.OpenWarehouse(ctx, cfg.Warehouse.URL)
	if err != nil {
		return nil, err
	}
	closers = append(closers, func() { wh.Bucket.Close() })
	// The meters come with the options, which run once the catalog is
	// open; its log's compare-and-sets are recorded from before the first
	// commit, which Open makes.
	lm := &logMeter{}
	cat, closeCat, err := openCatalog(ctx, CatalogOptions{
		Type: cfg.Catalog.Type, Log: cfg.Catalog.Log, URI: cfg.Catalog.URI,
		Warehouse: wh, Postgres: pcfg, LogOptions: logOptions(cfg), Logger: log,
	}, lm)
	if err != nil {
		return nil, err
	}
	closers = append(closers, closeCat)
	var key []byte
	if cfg.Retention.SubjectKey != "" {
		key = []byte(cfg.Retention.SubjectKey)
	}
	reg, err := privacy.Open(ctx, pool, privacy.Options{Schema: cfg.Postgres.Schema, SubjectKey: key, Logger: log})
	if err != nil {
		return nil, err
	}
	opts := OptionsFrom(cfg)
	opts.Pool, opts.ReadPool, opts.Catalog, opts.Registry, opts.Logger = pool, reads, cat, reg, log
	for _, f := range with {
		f(&opts)
	}
	if lm.m, err = metrics.New(opts.Meters); err != nil {
		return nil, fmt.Errorf("store: metrics: %w", err)
	}
	s, err := Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	s.closers, s.private = closers, private
	return s, nil
}

// A ConfigOption adjusts what OpenConfig opens beyond the configuration.
type ConfigOption func(*Options)

// WithMeters makes the store record its metrics with mp (Options.Meters),
// which the application chose; the configuration names no exporter.
func WithMeters(mp metric.MeterProvider) ConfigOption {
	return func(o *Options) { o.Meters = mp }
}

// WithWallClock makes the store read the wall clock with clock
// (NowOptions.WallClock): what bounds a now, the age of orphan files and
// of the system tables a statement sees. A test or a replay sets it.
func WithWallClock(clock func() time.Time) ConfigOption {
	return func(o *Options) { o.Now.WallClock = clock }
}

// localWarehouse creates the directory of a file:// warehouse.
func localWarehouse(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "file" {
		return nil
	}
	if err := os.MkdirAll(u.Path, 0o755); err != nil {
		return fmt.Errorf("store: warehouse: %w", err)
	}
	return nil
}

// Close waits for the DuckDB instances of ended queries, which close in
// the background, and releases what OpenConfig started: the pool, the
// log, the warehouse and the private server; a Store from Open owns
// nothing else.
func (s *Store) Close() {
	if s.engine != nil {
		// Its statements' DuckDB instances close in the background.
		s.engine.Close()
	}
	closeAll(s.closers)
	s.closers = nil
}

func closeAll(closers []func()) {
	for i := len(closers) - 1; i >= 0; i-- {
		closers[i]()
	}
}

// Ping reports whether the hot tier's PostgreSQL server answers. It is
// what a readiness check asks first: a table's status needs it too, but a
// deployment without tables has no status to ask.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.opts.Pool.Ping(ctx); err != nil {
		return fmt.Errorf("store: ping PostgreSQL: %w", err)
	}
	return nil
}

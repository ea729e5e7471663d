// Package store is MeterStore's front door: the declared tables of one
// deployment in both tiers, batched writes that route late corrections,
// archival, one SQL over both tiers, the system tables and the maintenance
// loop.
//
// Nothing runs on its own: a Store starts no goroutine until Maintenance
// is started, and every call that depends on the time takes now.
package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/metric"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/internal/archive"
	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/internal/metrics"
	"github.com/meterstore/meterstore/internal/query"
	"github.com/meterstore/meterstore/privacy"
	"github.com/meterstore/meterstore/series"
)

// Aliases of the table model's types, so that a program can declare
// tables and write readings through this package alone.
type (
	// Table declares a table: time model, columns, partition width.
	Table = series.Table
	// Reading is one row of a table.
	Reading = series.Reading
)

// Options configure a Store.
type Options struct {
	// Pool is the PostgreSQL database of the hot tier; the Store does not
	// close it.
	Pool *pgxpool.Pool
	// Catalog holds the cold tables; the catalog package's, on a
	// consensus log, or any iceberg-go catalog.
	Catalog icecatalog.Catalog
	// Tables are the declared tables. Open ensures each in both tiers and
	// refuses one whose declaration changed.
	Tables []Table
	Hot    HotOptions
	Cold   ColdOptions
	// Archive applies to every table; Open validates it against each
	// table's partition width.
	Archive ArchiveOptions
	Query   QueryOptions
	// Snapshots is the retention of snapshot expiry, which runs only when
	// the maintenance loop is told to.
	Snapshots SnapshotRetention
	// Now bounds the now the calls that take one accept.
	Now NowOptions
	// Registry is the subject registry the retention sweep runs on; nil
	// disables the sweep.
	Registry *privacy.Registry
	// Meters records metrics; nil records nothing.
	Meters metric.MeterProvider
	Logger *slog.Logger
}

// A Store is one deployment: its tables in PostgreSQL and Iceberg. It is
// safe for concurrent use.
type Store struct {
	opts    Options
	archive archive.Config // opts.Archive, as the archiver takes it
	log     *slog.Logger
	hot     *hot.Tier
	cold    *cold.Tier
	arch    *archive.Archiver
	router  *archive.Router
	metrics *metrics.Metrics
	tables  []*table // in declaration order
	closers []func() // what OpenConfig started, for Close

	mu     sync.Mutex
	system []query.Relation // the system tables, as last refreshed
}

// table is a declared table and its handles in both tiers.
type table struct {
	decl   *series.Table
	cold   *cold.Table
	engine *query.Engine
}

// Open returns a Store on opts, after ensuring every declared table in
// both tiers.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.Pool == nil || opts.Catalog == nil {
		return nil, errors.New("store: a pool and a catalog are required")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if !catalog.Guarded(opts.Catalog) {
		// Invariant 2 holds only where the watermark check runs.
		opts.Catalog = catalog.Guard(opts.Catalog, cold.WatermarkCheck())
	}
	s := &Store{opts: opts, log: log, archive: opts.Archive.config(log)}
	var err error
	if s.metrics, err = metrics.New(opts.Meters); err != nil {
		return nil, fmt.Errorf("store: metrics: %w", err)
	}
	if s.hot, err = hot.New(opts.Pool, opts.Hot.tier(log)); err != nil {
		return nil, err
	}
	if s.cold, err = cold.New(opts.Catalog, opts.Cold.tier(log)); err != nil {
		return nil, err
	}
	if s.arch, err = archive.New(s.hot, s.cold, opts.Pool, s.archive); err != nil {
		return nil, err
	}
	s.router = archive.NewRouter(s.hot, s.cold)
	seen := map[string]bool{}
	for i := range opts.Tables {
		decl := &opts.Tables[i]
		if seen[decl.Name] {
			return nil, fmt.Errorf("store: table %s declared twice", decl.Name)
		}
		seen[decl.Name] = true
		if err := s.archive.ValidateFor(decl.Width); err != nil {
			return nil, fmt.Errorf("store: table %s: %w", decl.Name, err)
		}
		if err := s.hot.Ensure(ctx, decl); err != nil {
			return nil, fmt.Errorf("store: declare %s: %w", decl.Name, err)
		}
		ct, err := s.cold.Ensure(ctx, decl)
		if err != nil {
			return nil, fmt.Errorf("store: declare %s: %w", decl.Name, err)
		}
		t := &table{decl: decl, cold: ct}
		if t.engine, err = query.New(decl, &query.TableSource{
			HotTier: s.hot, ColdTier: s.cold, Table: decl, ColdTable: ct, CacheDir: opts.Query.CacheDir,
			Scanned: func(ctx context.Context, n int64) { s.metrics.Scanned(ctx, decl.Name, metrics.TierHot, n) },
		}, opts.Query.settings()); err != nil {
			return nil, fmt.Errorf("store: query engine of %s: %w", decl.Name, err)
		}
		s.tables = append(s.tables, t)
	}
	return s, nil
}

// Tables returns the declared tables' names in declaration order.
func (s *Store) Tables() []string {
	names := make([]string, len(s.tables))
	for i, t := range s.tables {
		names[i] = t.decl.Name
	}
	return names
}

// Declaration returns a copy of the declaration of table name.
func (s *Store) Declaration(name string) (Table, error) {
	t, err := s.table(name)
	if err != nil {
		return Table{}, err
	}
	d := *t.decl
	d.Columns = slices.Clone(d.Columns)
	d.Resolutions = slices.Clone(d.Resolutions)
	return d, nil
}

func (s *Store) table(name string) (*table, error) {
	for _, t := range s.tables {
		if t.decl.Name == name {
			return t, nil
		}
	}
	return nil, fmt.Errorf("%w: %q", ErrNoTable, name)
}

// EnsurePartitions creates the partitions every table needs ahead of now,
// up to its headroom.
func (s *Store) EnsurePartitions(ctx context.Context, now time.Time) error {
	if err := s.CheckNow(now); err != nil {
		return err
	}
	var errs []error
	for _, t := range s.tables {
		if err := s.checkNowFor(ctx, t, now); err != nil {
			errs = append(errs, err)
			continue
		}
		if _, err := s.hot.EnsurePartitions(ctx, t.decl, now); err != nil {
			errs = append(errs, fmt.Errorf("store: partitions of %s: %w", t.decl.Name, err))
		}
	}
	return errors.Join(errs...)
}

// CreatePartitions creates every table's partitions for [from, to], for a
// backfill of days older than the headroom reaches.
func (s *Store) CreatePartitions(ctx context.Context, from, to time.Time) error {
	var errs []error
	for _, t := range s.tables {
		if _, err := s.hot.CreatePartitions(ctx, t.decl, from, to); err != nil {
			errs = append(errs, fmt.Errorf("store: partitions of %s: %w", t.decl.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Watermark returns the watermark of table name: readings before it are
// in the cold tier. ok is false when nothing was archived yet.
func (s *Store) Watermark(ctx context.Context, name string) (w time.Time, ok bool, err error) {
	t, err := s.table(name)
	if err != nil {
		return time.Time{}, false, err
	}
	return s.cold.Watermark(ctx, t.cold)
}

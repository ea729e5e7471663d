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
	"sync/atomic"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/metric"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/internal/altered"
	"github.com/meterstore/meterstore/internal/archive"
	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/internal/metrics"
	"github.com/meterstore/meterstore/internal/pgerr"
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
	// ReadPool, if set, is the same database's connections reserved for
	// the typed series reads (SeriesReadings, LatestReading, Gaps), so
	// that they never wait behind writes holding every connection of
	// Pool; nil means Pool. The Store does not close it.
	ReadPool *pgxpool.Pool
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
	series  *cold.SeriesReader // the typed reads' Parquet reader and its footer cache
	// typedHook, set by tests alone, runs in every attempt of a typed
	// read between its cold plan and its hot statement: where a
	// concurrent archival would move rows between the tiers.
	typedHook func()
	// sqlOnly, set by tests alone, has DuckDB run every statement, point
	// statements too (see pointRead).
	sqlOnly bool
	// sqlHook, set by tests alone, runs after an SQL read has read a
	// table's watermark, before it opens its hot snapshot or plans.
	sqlHook func()
	// ledgerSeen says the archival ledger exists, once a typed read saw
	// it: typed reads then read its watermark in their hot statement.
	ledgerSeen atomic.Bool
	// warm is the cold state typed reads keep between reads.
	warm    typedWarm
	altered *altered.Record // the cold files found altered
	copies  *cold.Copies    // the local copies of a remote warehouse's data files
	metrics *metrics.Metrics
	tables  []*table       // in declaration order
	engine  *query.Engine  // answers SQL over every table
	closers []func()       // what OpenConfig started, for Close
	private *privateServer // the private server OpenConfig started or joined

	mu       sync.Mutex
	system   []query.Relation // the system tables, as last refreshed
	systemAt time.Time        // when, by the wall clock

	refreshing sync.Mutex // one refresh of the system tables at a time
}

// table is a declared table and its handles in both tiers. A table that
// could not be opened (its cold metadata unreadable, its database
// unreachable) has no handles: every operation on it tries again, and
// fails alone with a *TableOpenError until it succeeds.
type table struct {
	decl *series.Table

	mu       sync.Mutex
	hotReady bool         // the hot tier's table is ensured
	cold     *cold.Table  // nil until opened
	query    *query.Table // nil until opened: the table as SQL reads it
	openErr  error        // why the last attempt to open failed
	forks    string       // the mirror forks last logged, so each is logged once
	below    string       // the partitions below W last logged, likewise
	// coldErr is why the cold tier could not be ensured when the table
	// opened (its warehouse or catalog away, its metadata unreadable):
	// the table then runs on its hot tier alone, cold is a handle that
	// reads nothing, and ready ensures it again at most every
	// coldRetry, so that it comes back without a restart.
	coldErr   error
	coldTried time.Time // by the wall clock
	// hotErr is why the hot tier's table could not be ensured (PostgreSQL
	// unreachable): the table then answers historical reads alone, every
	// other operation fails with it, and ready ensures it again at most
	// every coldRetry.
	hotErr   error
	hotTried time.Time // by the wall clock
	// quarantine is the hot tier's refusal of decl's change of columns (a
	// *QuarantineError), nil if it took it. The table then runs on
	// stored, decl with the columns its relation was declared with: it
	// ingests into PostgreSQL what those hold and answers, and archives
	// nothing (see Store.Write).
	quarantine error
	stored     *series.Table
}

// running returns the declaration t runs on, and the hot tier's quarantine
// of its own, if any.
func (t *table) running() (*series.Table, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stored != nil {
		return t.stored, t.quarantine
	}
	return t.decl, nil
}

// A TableOpenError reports a declared table that cannot be opened, such as
// one whose cold metadata is unreadable. The table fails alone: the others
// keep ingesting, archiving and answering, and every operation on it tries
// to open it again, so a repaired table comes back without a restart.
type TableOpenError struct {
	Table string
	Err   error
}

// Error names the table and why it cannot be opened.
func (e *TableOpenError) Error() string {
	return fmt.Sprintf("store: table %s cannot be opened: %v", e.Table, e.Err)
}

// Unwrap returns why the table cannot be opened.
func (e *TableOpenError) Unwrap() error { return e.Err }

// IsRetryable reports whether opening the table may succeed when tried
// again unchanged, as its cause says.
func (e *TableOpenError) IsRetryable() bool { return IsRetryable(e.Err) }

// Open returns a Store on opts, after ensuring every declared table in
// both tiers. A declaration that is invalid, or that its tiers refuse as
// such, fails Open; a table that cannot be opened for any other reason
// (unreadable cold metadata, a quarantined schema) does not: it fails
// alone, and Status names it.
func Open(ctx context.Context, opts Options) (_ *Store, err error) {
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
	if s.metrics, err = metrics.New(opts.Meters); err != nil {
		return nil, fmt.Errorf("store: metrics: %w", err)
	}
	if s.hot, err = hot.New(opts.Pool, opts.Hot.tier(log, opts.ReadPool)); err != nil {
		return nil, err
	}
	if s.cold, err = cold.New(opts.Catalog, opts.Cold.tier(log)); err != nil {
		return nil, err
	}
	s.altered = altered.New(opts.Pool, s.hot.Schema(), s.ensureServiceTable)
	if s.arch, err = archive.New(s.hot, s.cold, opts.Pool, s.archive); err != nil {
		return nil, err
	}
	s.copies = cold.NewCopies(cold.CopyOptions{Dir: opts.Query.CacheDir, MaxBytes: opts.Query.CacheBytes, Idle: opts.Query.timeout(), Logger: log,
		Looked:  func(hit bool) { s.metrics.CopyLookup(context.Background(), hit) },
		Trimmed: func(kept int64, removed int) { s.metrics.CopiesTrimmed(context.Background(), kept, removed) },
	})
	s.series = cold.NewSeriesReader(opts.Query.FooterCacheBytes, func(hit bool, files int, bytes int64) {
		s.metrics.FooterCache(context.Background(), hit, int64(files), bytes)
	})
	s.router = archive.NewRouter(s.hot, s.cold)
	s.router.Vet = s.arch.VetWatermark
	s.router.Recorded = s.arch.RecordedWatermark
	s.router.AcceptAhead = opts.Hot.AcceptAhead
	names := make([]string, len(opts.Tables))
	for i := range opts.Tables {
		names[i] = opts.Tables[i].Name
	}
	set := opts.Query.settings()
	set.Logger = log
	if s.engine, err = query.New(set, query.Tables{Names: names, Open: s.queryTable}); err != nil {
		return nil, fmt.Errorf("store: query engine: %w", err)
	}
	// Built before the tables, so that settings it refuses touch none of
	// them; an Open that fails after it closes its warm instance now
	// rather than when its idle timer fires.
	defer func() {
		if err != nil {
			s.engine.Close()
		}
	}()
	seen := map[string]bool{}
	for i := range opts.Tables {
		decl := &opts.Tables[i]
		if seen[decl.Name] {
			return nil, fmt.Errorf("store: table %s declared twice", decl.Name)
		}
		seen[decl.Name] = true
		if err := decl.Validate(); err != nil {
			return nil, fmt.Errorf("store: table %s: %w", decl.Name, err)
		}
		if err := s.archive.ValidateFor(decl.Width); err != nil {
			return nil, fmt.Errorf("store: table %s: %w", decl.Name, err)
		}
		t := &table{decl: decl}
		s.tables = append(s.tables, t)
		if _, _, err := s.ready(ctx, t); err != nil {
			if declarationRefused(err) {
				return nil, err
			}
			log.Error("store: table cannot be opened; it fails alone until it can", "table", decl.Name, "err", err)
		}
	}
	return s, nil
}

// declarationRefused reports whether err says that a declaration itself
// is wrong, which fails Open rather than the table alone.
func declarationRefused(err error) bool {
	var e *series.Error
	return errors.As(err, &e) && (e.Kind == series.InvalidConfig || e.Kind == series.InvalidInput)
}

// ready opens t unless it is open: it ensures the table in both tiers and
// builds the table as SQL reads it. A quarantined table is open: whether its cold
// schema cannot take its rows or its hot tier refused its change of
// columns, it ingests and answers, and the archiver refuses it. An error
// is a *TableOpenError; the next call tries again.
func (s *Store) ready(ctx context.Context, t *table) (*cold.Table, *query.Table, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.query != nil {
		if !t.hotReady && s.opts.Now.wall().Sub(t.hotTried) >= coldRetry {
			t.hotTried = s.opts.Now.wall()
			if err := s.ensureHot(ctx, t); err != nil {
				t.hotErr = err
			} else {
				s.log.Info("store: the hot tier of the table is ensured again", "table", t.decl.Name)
			}
		}
		if t.coldErr != nil {
			s.retryCold(ctx, t, false)
		}
		return t.cold, t.query, nil
	}
	err := s.open(ctx, t)
	if err != nil {
		t.openErr = &TableOpenError{Table: t.decl.Name, Err: err}
		return nil, nil, t.openErr
	}
	if t.openErr != nil {
		s.log.Info("store: table opened", "table", t.decl.Name, "after", t.openErr)
		t.openErr = nil
	}
	return t.cold, t.query, nil
}

// ensureHot ensures the hot tier's table of t; t.mu is held.
func (s *Store) ensureHot(ctx context.Context, t *table) error {
	err := s.hot.Ensure(ctx, t.decl)
	var q *QuarantineError
	switch {
	case errors.As(err, &q):
		stored, serr := s.hot.Stored(ctx, t.decl)
		if serr != nil {
			return fmt.Errorf("store: declare %s: %w (and its stored declaration cannot be read: %w)", t.decl.Name, err, serr)
		}
		t.stored, t.quarantine = stored, err
		s.log.Error("store: table quarantined: it ingests what its stored columns hold and answers, archival is refused",
			"table", t.decl.Name, "err", err)
	case err != nil:
		return fmt.Errorf("store: declare %s: %w", t.decl.Name, err)
	}
	t.hotReady, t.hotErr = true, nil
	return nil
}

// open does the work of ready; t.mu is held.
func (s *Store) open(ctx context.Context, t *table) error {
	if !t.hotReady {
		err := s.ensureHot(ctx, t)
		switch {
		case err != nil && pgerr.Network(err):
			// Degrade, don't stop: PostgreSQL cannot be reached, and a
			// historical read needs none of it. Everything else fails
			// with t.hotErr, retryably, until the hot table is ensured.
			// (A lock not had in time fails the table alone, as any
			// other refusal of the hot tier.)
			t.hotErr, t.hotTried = err, s.opts.Now.wall()
			s.log.Warn("store: the hot tier of the table cannot be ensured; only historical reads answer until it can",
				"table", t.decl.Name, "err", err)
		case err != nil:
			return err
		}
	}
	decl := t.decl
	if t.stored != nil {
		decl = t.stored
	}
	ct, err := s.ensureCold(ctx, decl)
	var q *cold.QuarantineError
	switch {
	case errors.As(err, &q) && ct != nil:
		s.log.Error("store: table quarantined: it ingests and answers, archival is refused", "table", decl.Name, "err", err)
	case err != nil && declarationRefused(err):
		return fmt.Errorf("store: declare %s: %w", decl.Name, err)
	case err != nil:
		// Degrade, don't stop: what needs only PostgreSQL (writes above
		// the watermark the ledger recorded, operational reads) goes on,
		// and what needs the cold tier fails with t.coldErr until the
		// table's cold tier is ensured.
		ct = s.cold.Handle(decl)
		t.coldErr, t.coldTried = coldUnavailable(decl.Name, err), s.opts.Now.wall()
		s.log.Warn("store: the cold tier of the table cannot be ensured; it runs on PostgreSQL alone until it can",
			"table", decl.Name, "err", err)
	}
	qt, err := query.NewTable(decl, &query.TableSource{
		HotTier: hotTier{s.hot}, ColdTier: s.cold, Table: decl, ColdTable: ct, Copies: s.copies,
		Scanned: func(ctx context.Context, n int64) { s.metrics.Scanned(ctx, decl.Name, metrics.TierHot, n) },
		VetWatermark: func(ctx context.Context, read func(context.Context) (time.Time, bool, error)) (time.Time, bool, error) {
			w, ok, err := s.arch.VetWatermark(ctx, decl.Name, read)
			if s.sqlHook != nil {
				s.sqlHook()
			}
			return w, ok, err
		},
		Vouch:        s.vouch(decl.Name),
		Kept:         func(ctx context.Context) (cold.Loaded, bool) { return s.keptCold(ctx, ct) },
		Keep:         func(l cold.Loaded) { s.warm.put(decl.Name, l) },
		VetPlan:      func(ctx context.Context, p cold.Plan) error { return s.altered.Vet(ctx, decl.Name, p) },
		CheckDigests: s.opts.Query.VerifyDigests,
		Altered:      func(ctx context.Context, e *cold.AlteredFileError) { s.readFoundAltered(ctx, decl.Name, e) },
	})
	if err != nil {
		return fmt.Errorf("store: query engine of %s: %w", decl.Name, err)
	}
	t.cold, t.query = ct, qt
	return nil
}

// queryTable returns table name as SQL reads it, opening it if need be,
// for a statement that names it. A table that cannot be opened fails that
// statement with its *TableOpenError.
func (s *Store) queryTable(ctx context.Context, name string) (*query.Table, error) {
	t, err := s.table(name)
	if err != nil {
		return nil, err
	}
	_, qt, err := s.ready(ctx, t)
	return qt, err
}

// opened returns t's handles, opening it if need be, for an operation
// that needs its cold tier: one that runs on its hot tier alone fails it
// with why its cold tier cannot be ensured, retryably where that is.
func (s *Store) opened(ctx context.Context, name string) (*table, *cold.Table, *query.Table, error) {
	t, ct, engine, err := s.openedHot(ctx, name)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := t.coldState(); err != nil {
		return nil, nil, nil, err
	}
	if err := t.hotState(); err != nil {
		return nil, nil, nil, err
	}
	return t, ct, engine, nil
}

// openedHot is opened for an operation that may run on the hot tier
// alone: a write, a query.
func (s *Store) openedHot(ctx context.Context, name string) (*table, *cold.Table, *query.Table, error) {
	t, err := s.table(name)
	if err != nil {
		return nil, nil, nil, err
	}
	ct, engine, err := s.ready(ctx, t)
	if err != nil {
		return nil, nil, nil, err
	}
	return t, ct, engine, nil
}

// coldRetry is how often an operation on a table whose cold tier could
// not be ensured tries again: each try reads the warehouse, which may be
// slow to fail.
const coldRetry = 5 * time.Second

// ensureCold ensures the cold table of decl: EnsureExisting when the
// archival ledger records windows archived into it, or cannot be read, so
// that a warehouse or log that is away is not taken for a table never
// created.
func (s *Store) ensureCold(ctx context.Context, decl *series.Table) (*cold.Table, error) {
	_, archived, err := s.arch.RecordedWatermark(ctx, decl.Name)
	if err != nil || archived {
		return s.cold.EnsureExisting(ctx, decl)
	}
	return s.cold.Ensure(ctx, decl)
}

// retryCold ensures the cold tier of t, which runs on its hot tier alone,
// again, if it was last tried coldRetry ago or force is set; t.mu is held.
func (s *Store) retryCold(ctx context.Context, t *table, force bool) {
	now := s.opts.Now.wall()
	if !force && now.Sub(t.coldTried) < coldRetry {
		return
	}
	t.coldTried = now
	decl := t.decl
	if t.stored != nil {
		decl = t.stored
	}
	ct, err := s.ensureCold(ctx, decl)
	var q *cold.QuarantineError
	switch {
	case err == nil, errors.As(err, &q) && ct != nil:
		s.log.Info("store: the cold tier of the table is ensured again", "table", decl.Name, "after", t.coldErr)
		t.cold, t.coldErr = ct, nil
	default:
		t.coldErr = coldUnavailable(decl.Name, err)
	}
}

// retryColdNow is retryCold, forced, for status: it runs at the pace of
// readiness probes, and an operator who brought the warehouse back wants
// to see it.
func (s *Store) retryColdNow(ctx context.Context, t *table) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.query != nil && t.coldErr != nil {
		s.retryCold(ctx, t, true)
	}
}

// hotState returns why t answers historical reads alone, nil if its hot
// tier is ensured.
func (t *table) hotState() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.hotErr
}

// coldState returns why t runs on its hot tier alone, nil if it does not.
func (t *table) coldState() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.coldErr
}

// coldUnavailable returns why the cold tier of table name cannot be
// ensured, err, as the error of what needs it: wrapping ErrColdUnreachable,
// and retryable unless err is a file not the one its commit recorded.
func coldUnavailable(name string, err error) error {
	var altered *cold.AlteredFileError
	if errors.As(err, &altered) {
		return err
	}
	return &series.Error{Kind: series.Unavailable, Op: "open the cold tier of", Table: name, Err: fmt.Errorf("%w: %w", ErrColdUnreachable, err)}
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
		decl, _ := t.running()
		if _, err := s.hot.EnsurePartitions(ctx, decl, now); err != nil {
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
		decl, _ := t.running()
		if _, err := s.hot.CreatePartitions(ctx, decl, from, to); err != nil {
			errs = append(errs, fmt.Errorf("store: partitions of %s: %w", t.decl.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Watermark returns the watermark of table name: readings before it are
// in the cold tier. ok is false when nothing was archived yet.
func (s *Store) Watermark(ctx context.Context, name string) (w time.Time, ok bool, err error) {
	_, ct, _, err := s.opened(ctx, name)
	if err != nil {
		return time.Time{}, false, err
	}
	w, ok, err = s.arch.VetWatermark(ctx, name, func(ctx context.Context) (time.Time, bool, error) { return s.cold.Watermark(ctx, ct) })
	if err != nil {
		return time.Time{}, false, err
	}
	return w, ok, nil
}

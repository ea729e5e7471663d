package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"maps"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	icesql "github.com/apache/iceberg-go/catalog/sql"
	icetable "github.com/apache/iceberg-go/table"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx" for iceberg-go's SQL catalog
	"go.opentelemetry.io/otel/metric"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/consensus"
	"github.com/meterstore/meterstore/consensus/bloblog"
	"github.com/meterstore/meterstore/consensus/postgres"
	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/metrics"
)

// The catalogs a deployment can commit through.
const (
	// CatalogLog is MeterStore's own catalog on a consensus log: no
	// catalog server. The default.
	CatalogLog = "log"
	// CatalogREST is an Iceberg REST catalog at CatalogOptions.URI.
	CatalogREST = "rest"
	// CatalogSQL is iceberg-go's SQL (JDBC-layout) catalog in PostgreSQL.
	CatalogSQL = "sql"
)

// The logs MeterStore's own catalog can run on.
const (
	// LogPostgres keeps the log in a PostgreSQL table. The default.
	LogPostgres = "postgres"
	// LogObjectStore keeps the log in the warehouse, with PutIfAbsent.
	LogObjectStore = "object_store"
)

// CatalogOptions select the catalog a deployment's cold tier commits
// through.
type CatalogOptions struct {
	// Type is CatalogLog (default), CatalogREST or CatalogSQL.
	Type string
	// Log is the log of a CatalogLog: LogPostgres (default) or
	// LogObjectStore.
	Log string
	// URI is the REST catalog's address, or the SQL catalog's database
	// (default: Postgres).
	URI string
	// Warehouse is where the tables' files live; see catalog.OpenWarehouse.
	Warehouse catalog.Warehouse
	// Postgres is the database of a log in PostgreSQL and the default
	// database of the SQL catalog.
	Postgres *pgxpool.Config
	// LogOptions configure a log in PostgreSQL: schema and isolation.
	LogOptions postgres.Options
	// Meters records the compare-and-sets of the log of a CatalogLog
	// (meterstore.log.cas.*); nil records nothing.
	Meters metric.MeterProvider
	Logger *slog.Logger

	// beforeCommit, if set, runs in every commit's check, after the
	// watermark check and before the log's compare-and-set: a test's way
	// to have another writer commit in between.
	beforeCommit func(ident icetable.Identifier)
}

// OpenCatalog opens the catalog opts select, with the watermark check
// installed: the check that refuses a commit moving a table's watermark
// back. MeterStore's own catalog runs it inside the log's compare-and-set;
// a REST or SQL catalog is guarded (catalog.Guard). It is the one way the
// module opens a deployment's catalog. Close releases what it opened.
func OpenCatalog(ctx context.Context, opts CatalogOptions) (icecatalog.Catalog, func(), error) {
	m, err := metrics.New(opts.Meters)
	if err != nil {
		return nil, nil, fmt.Errorf("store: metrics: %w", err)
	}
	return openCatalog(ctx, opts, &logMeter{m: m})
}

// openCatalog is OpenCatalog, with the log's compare-and-sets recorded by
// lm under the log's backend.
func openCatalog(ctx context.Context, opts CatalogOptions, lm *logMeter) (icecatalog.Catalog, func(), error) {
	var closers []func()
	fail := func(err error) (icecatalog.Catalog, func(), error) {
		closeAll(closers)
		return nil, nil, err
	}
	check := cold.WatermarkCheck()
	if hook := opts.beforeCommit; hook != nil {
		watermark := check
		check = func(ident icetable.Identifier, base, next icetable.Metadata) error {
			if err := watermark(ident, base, next); err != nil {
				return err
			}
			hook(ident)
			return nil
		}
	}
	switch opts.Type {
	case CatalogREST:
		cat, err := rest.NewCatalog(ctx, "rest", opts.URI, rest.WithAdditionalProps(opts.Warehouse.Props))
		if err != nil {
			return fail(fmt.Errorf("store: REST catalog %s: %w", opts.URI, err))
		}
		return catalog.Guard(cat, check), func() { cat.Close() }, nil
	case CatalogSQL:
		uri := opts.URI
		if uri == "" {
			if opts.Postgres == nil {
				return fail(errors.New("store: SQL catalog: no database"))
			}
			uri = opts.Postgres.ConnString()
		}
		db, err := sql.Open("pgx", uri)
		if err != nil {
			return fail(fmt.Errorf("store: SQL catalog: %w", err))
		}
		closers = append(closers, func() { db.Close() })
		props := iceberg.Properties{"warehouse": opts.Warehouse.Root}
		maps.Copy(props, opts.Warehouse.Props)
		cat, err := icesql.NewCatalog("meterstore", db, icesql.Postgres, props)
		if err != nil {
			return fail(fmt.Errorf("store: SQL catalog: %w", err))
		}
		return catalog.Guard(cat, check), func() { closeAll(closers) }, nil
	case CatalogLog, "":
	default:
		return fail(fmt.Errorf("store: catalog type %q: want %q, %q or %q", opts.Type, CatalogLog, CatalogREST, CatalogSQL))
	}
	var clog consensus.Log
	switch opts.Log {
	case LogObjectStore:
		l, err := bloblog.New(opts.Warehouse.Bucket, "_log/")
		if err != nil {
			return fail(fmt.Errorf("store: log on the warehouse: %w", err))
		}
		clog = l
	case LogPostgres, "":
		if opts.Postgres == nil {
			return fail(errors.New("store: log in PostgreSQL: no database"))
		}
		pl, err := postgres.Open(ctx, opts.Postgres.Copy(), opts.LogOptions)
		if err != nil {
			return fail(fmt.Errorf("store: log in PostgreSQL: %w", err))
		}
		closers = append(closers, pl.Close)
		clog = pl
	default:
		return fail(fmt.Errorf("store: catalog log %q: want %q or %q", opts.Log, LogPostgres, LogObjectStore))
	}
	lm.backend = backendOf(opts.Log)
	cat, err := catalog.New(catalog.Options{Warehouse: opts.Warehouse, Log: clog, Check: check, Logger: opts.Logger,
		ObserveCAS: lm.observe})
	if err != nil {
		return fail(err)
	}
	return cat, func() { closeAll(closers) }, nil
}

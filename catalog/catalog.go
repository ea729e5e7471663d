// Package catalog is an Apache Iceberg catalog without a catalog server.
//
// Each table is one consensus shard. A commit writes the table's new
// metadata file to the warehouse under a unique name and then appends its
// location to the shard with CompareAndSet; the append is the commit. The
// shard's log is therefore the table's commit history, and the log may live
// in PostgreSQL (consensus/postgres) or in the warehouse's own object store
// (consensus/bloblog), in which case the deployment has no database at all.
//
// Foreign engines find tables without this process in two ways: every
// commit also publishes metadata/v<N>.metadata.json and
// metadata/version-hint.text, the layout that PyIceberg's StaticTable and
// DuckDB's iceberg_scan read (a commit another writer makes there is a
// Fork: found, reported, never overwritten; see CheckMirror); and package
// catalog/rest serves the catalog over the Iceberg REST catalog protocol,
// read-only or, for engines that are meant to write (iceberg-go's REST
// client among them), with writes that go through the same methods, so
// through the log and the CommitCheck.
//
// The catalog knows nothing of what its tables hold; Guard puts the same
// CommitCheck in front of a foreign catalog.
package catalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/consensus"
)

// CatalogType is what CatalogType reports.
const CatalogType icecatalog.Type = "meterstore"

// ErrUnsupported is returned by the operations this catalog does not offer.
var ErrUnsupported = errors.New("not supported by the meterstore catalog")

// CommitCheck inspects a commit before it is attempted. base is nil when the
// commit creates the table. A non-nil error refuses the commit, unchanged.
type CommitCheck func(ident table.Identifier, base, next table.Metadata) error

// Options configure a Catalog.
type Options struct {
	// Name is the catalog's name; default "meterstore".
	Name string
	// Warehouse is where tables live; see OpenWarehouse.
	Warehouse Warehouse
	// Log records the commits. Its shards are named "<ShardPrefix>table/<ns>.<name>"
	// and "<ShardPrefix>registry".
	Log consensus.Log
	// ShardPrefix keeps this catalog's shards apart from others on the same log.
	ShardPrefix string
	// Check, if set, runs before every commit, on retries too.
	Check CommitCheck
	// Logger receives warnings about best-effort steps; nil discards them.
	Logger *slog.Logger
	// ObserveCAS, if set, is told of every compare-and-set the catalog
	// makes on Log, after the log answered, in the goroutine that made
	// it: how long the log took and whether the commit won its race. It
	// is how an application measures the log; it must return quickly.
	ObserveCAS func(ctx context.Context, e CASEvent)
	// TableLogKeep is how many of a table's newest commits its log keeps
	// at least; older entries are truncated as commits land (see trim.go).
	// Zero means DefaultTableLogKeep; a negative value keeps every commit.
	TableLogKeep int
}

// Catalog implements iceberg-go's catalog.Catalog and table.CatalogIO.
type Catalog struct {
	name   string
	wh     Warehouse
	log    consensus.Log
	prefix string
	check  CommitCheck
	logger *slog.Logger
	keep   int
	metas  metaCache
}

var (
	_ icecatalog.Catalog = (*Catalog)(nil)
	_ table.CatalogIO    = (*Catalog)(nil)
)

// New returns a catalog over opts.Warehouse whose commits go through opts.Log.
func New(opts Options) (*Catalog, error) {
	if opts.Log == nil || opts.Warehouse.Bucket == nil || opts.Warehouse.Root == "" {
		return nil, errors.New("catalog: a log and a warehouse (bucket and root) are required")
	}
	if opts.Name == "" {
		opts.Name = "meterstore"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.TableLogKeep == 0 {
		opts.TableLogKeep = DefaultTableLogKeep
	}
	if opts.ObserveCAS != nil {
		opts.Log = &observedLog{Log: opts.Log, prefix: opts.ShardPrefix, observe: opts.ObserveCAS}
	}
	return &Catalog{
		name:   opts.Name,
		wh:     opts.Warehouse,
		log:    opts.Log,
		prefix: opts.ShardPrefix,
		check:  opts.Check,
		logger: opts.Logger,
		keep:   opts.TableLogKeep,
	}, nil
}

// Name returns the catalog's name.
func (c *Catalog) Name() string { return c.name }

// CatalogType implements catalog.Catalog.
func (c *Catalog) CatalogType() icecatalog.Type { return CatalogType }

// Warehouse returns the warehouse the catalog writes to.
func (c *Catalog) Warehouse() Warehouse { return c.wh }

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// validName checks one part of an identifier: letters, digits and
// underscores, so that it is a path segment, a shard name and an SQL
// identifier on every engine without quoting.
func validName(kind, s string) error {
	if !identRE.MatchString(s) {
		return fmt.Errorf("%w: %s %q: want letters, digits and underscores, not starting with a digit, at most 128",
			icecatalog.ErrInvalidIdentifier, kind, s)
	}
	return nil
}

func validNamespace(ns table.Identifier) (string, error) {
	if len(ns) != 1 {
		return "", fmt.Errorf("%w: namespace %q: exactly one level is supported", icecatalog.ErrInvalidIdentifier, strings.Join(ns, "."))
	}
	return ns[0], validName("namespace", ns[0])
}

// split validates a table identifier and returns its namespace and name.
func split(ident table.Identifier) (ns, name string, err error) {
	if len(ident) != 2 {
		return "", "", fmt.Errorf("%w: table %q: want namespace.table", icecatalog.ErrInvalidIdentifier, strings.Join(ident, "."))
	}
	if ns, err = validNamespace(ident[:1]); err != nil {
		return "", "", err
	}
	return ns, ident[1], validName("table", ident[1])
}

func (c *Catalog) tableShard(ns, name string) string { return c.prefix + "table/" + ns + "." + name }

func (c *Catalog) registryShard() string { return c.prefix + "registry" }

// tableLocation is where a table's files live unless CreateTable says otherwise.
func (c *Catalog) tableLocation(ns, name string) string {
	return c.wh.Root + "/" + ns + "/" + name
}

// RenameTable is not supported: a table's history is its shard, and the
// shard is named after the table.
func (c *Catalog) RenameTable(context.Context, table.Identifier, table.Identifier) (*table.Table, error) {
	return nil, fmt.Errorf("catalog: rename: %w", ErrUnsupported)
}

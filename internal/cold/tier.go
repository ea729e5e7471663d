package cold

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/internal/parquetzstd"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// Defaults of Options.
const (
	DefaultNamespace      = "meterstore"
	DefaultRowGroupRows   = 1 << 20
	DefaultRowGroupBytes  = 64 << 20
	DefaultTargetFileSize = 256 << 20
	DefaultZstdLevel      = 3
	DefaultBatchRows      = 8192
	DefaultBloomBytes     = 32 << 10
)

// Options configure a Tier. Zero values mean the defaults.
type Options struct {
	// Namespace holds the tables; default "meterstore".
	Namespace string
	// RowGroupRows and RowGroupBytes bound a Parquet row group. A row group
	// is buffered in memory until it is complete, so they also bound the
	// memory an archival needs per open file.
	RowGroupRows  int
	RowGroupBytes int64
	// TargetFileSize is the size at which a data file is closed and the
	// next one started.
	TargetFileSize int64
	// ZstdLevel is the zstd compression level of the data files.
	ZstdLevel int
	// BloomBytes is the largest a bloom filter may grow, per column and
	// row group. A filter takes the smallest power of two from 2 KiB up
	// that holds the row group's distinct values at a 1% false positive
	// rate; 32 KiB hold about 27,000 distinct market locations, far more
	// than a row group of readings in key order has.
	BloomBytes int
	// BatchRows is the number of readings per Arrow batch when writing and
	// scanning: with the row group, it bounds the memory of a stream.
	BatchRows int
	// Logger receives warnings about cleanup that failed; nil discards them.
	Logger *slog.Logger
}

// A Tier is the Iceberg tier of a store. It holds no state of its own beyond
// its settings and is safe for concurrent use.
type Tier struct {
	cat icecatalog.Catalog
	// own is cat where it is MeterStore's catalog, nil otherwise: the
	// catalog whose log says which commit a load read (see Load).
	own  *catalog.Catalog
	opts Options
	log  *slog.Logger
	cal  *metering.Calendar
	// plans keeps the plans of recent queries, and chains the proven
	// manifests of recent snapshots they are made from.
	plans  planCache
	chains chainCache
	// archived keeps the rollup commit the last archival of each table
	// prepared until the catch-up after it (see prepareRollup).
	archived archivedRollups

	// beforeCommit, if set, runs between staging and committing a
	// snapshot: tests use it to lose a race on purpose.
	beforeCommit func(ctx context.Context, name string)
	// rollupSkipsLate, tests only: CatchUpRollup leaves out the days of
	// late corrections, so that a test shows it would notice.
	rollupSkipsLate bool
	// rollupReadsBack, tests only: an archival sums nothing and
	// CatchUpRollup reads its window back; rollupSummed counts the
	// catch-ups that took an archival's sums.
	rollupReadsBack bool
	rollupSummed    atomic.Int64
	// purgeStep, if set, runs before Purge deletes each file and, with "",
	// before it drops the entry: tests fail it to cut a purge short.
	purgeStep func(file string) error
}

// New returns a Tier that keeps its tables in cat. A catalog that runs no
// commit check of its own (catalog.Guarded) is guarded with WatermarkCheck,
// so that every commit of the Tier, and every retry iceberg-go replays onto
// a newer base, is checked against the snapshot it replaces, whatever the
// catalog type. The first New of a process registers the zstd codec of
// parquetzstd with arrow-go, for every reader and writer of Parquet.
func New(cat icecatalog.Catalog, opts Options) (*Tier, error) {
	if cat == nil {
		return nil, errors.New("cold: a catalog is required")
	}
	// A program that uses the store library writes the files meterstore
	// does, and its memory holds no 8 MiB histories (see parquetzstd).
	if err := parquetzstd.Register(); err != nil {
		return nil, fmt.Errorf("cold: %w", err)
	}
	own, _ := cat.(*catalog.Catalog)
	if !catalog.Guarded(cat) {
		cat = catalog.Guard(cat, WatermarkCheck())
	}
	cal, err := metering.NewCalendar()
	if err != nil {
		return nil, fmt.Errorf("cold: %w", err)
	}
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.RowGroupRows == 0 {
		opts.RowGroupRows = DefaultRowGroupRows
	}
	if opts.RowGroupBytes == 0 {
		opts.RowGroupBytes = DefaultRowGroupBytes
	}
	if opts.TargetFileSize == 0 {
		opts.TargetFileSize = DefaultTargetFileSize
	}
	if opts.ZstdLevel == 0 {
		opts.ZstdLevel = DefaultZstdLevel
	}
	if opts.BatchRows == 0 {
		opts.BatchRows = DefaultBatchRows
	}
	if opts.BloomBytes == 0 {
		opts.BloomBytes = DefaultBloomBytes
	}
	switch {
	case opts.RowGroupRows < 0 || opts.RowGroupBytes < 0 || opts.TargetFileSize < 0 || opts.BatchRows < 0:
		return nil, errors.New("cold: negative size in options")
	case opts.BloomBytes < 32 || opts.BloomBytes > 128<<20:
		return nil, fmt.Errorf("cold: bloom filter size %d: want 32 bytes to 128 MiB", opts.BloomBytes)
	case opts.ZstdLevel < 1 || opts.ZstdLevel > 22:
		return nil, fmt.Errorf("cold: zstd level %d: want 1 to 22", opts.ZstdLevel)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Tier{cat: cat, own: own, opts: opts, log: opts.Logger, cal: cal}, nil
}

// A Table is a handle on the cold table of a declared table. It caches
// nothing: every operation reads the table's current metadata.
type Table struct {
	decl  series.Table
	ident table.Identifier
}

// Name returns the table's name.
func (t *Table) Name() string { return t.decl.Name }

// Identifier returns the table's Iceberg identifier, namespace first.
func (t *Table) Identifier() table.Identifier { return slices.Clone(t.ident) }

func cloneDecl(t *series.Table) *series.Table {
	d := *t
	d.Resolutions = slices.Clone(t.Resolutions)
	d.Columns = slices.Clone(t.Columns)
	for i := range d.Columns {
		d.Columns[i].Values = slices.Clone(d.Columns[i].Values)
	}
	return &d
}

// load returns the table's current state.
func (c *Tier) load(ctx context.Context, h *Table) (*table.Table, error) {
	ice, err := c.cat.LoadTable(ctx, h.ident)
	return c.loaded(h, ice, err)
}

// loaded returns ice, the load of h that failed with err if it did, as
// load does.
func (c *Tier) loaded(h *Table, ice *table.Table, err error) (*table.Table, error) {
	var me *catalog.MetadataAlteredError
	if errors.As(err, &me) {
		// The log vouches for the metadata file, and it is not the one
		// committed: nothing it says can be trusted.
		return nil, &AlteredFileError{Table: h.decl.Name, File: me.Location, Reason: me.Error(), Metadata: true}
	}
	if err != nil {
		return nil, fmt.Errorf("cold: load %s: %w", h.decl.Name, err)
	}
	return ice, nil
}

// Iceberg returns the table's current state as iceberg-go sees it.
func (c *Tier) Iceberg(ctx context.Context, t *Table) (*table.Table, error) { return c.load(ctx, t) }

// Watermark returns the table's current watermark; see the function Watermark.
func (c *Tier) Watermark(ctx context.Context, t *Table) (time.Time, bool, error) {
	ice, err := c.load(ctx, t)
	if err != nil {
		return time.Time{}, false, err
	}
	return Watermark(ice.Metadata())
}

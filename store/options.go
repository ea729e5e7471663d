package store

import (
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/meterstore/meterstore/internal/archive"
	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/internal/query"
)

// HotOptions configure the PostgreSQL tier.
type HotOptions struct {
	// Schema holds the tables, their partitions and the tier's metadata;
	// default "meterstore".
	Schema string
	// DDLLockTimeout bounds how long partition DDL, and the ALTER of a
	// declaration's evolved columns, waits for a lock before it gives up,
	// changing nothing; zero means 3 s, NoLockTimeout waits indefinitely.
	DDLLockTimeout time.Duration
	// AcceptAhead bounds how far past now Write creates the partition of
	// a row that has none (hot.accept_ahead); a row whose partition would
	// start later is refused. Zero means DefaultAcceptAhead.
	AcceptAhead time.Duration
}

// DefaultAcceptAhead is HotOptions.AcceptAhead when it is zero: a week.
const DefaultAcceptAhead = archive.DefaultAcceptAhead

// NoLockTimeout, as HotOptions.DDLLockTimeout, lets DDL wait for its locks
// indefinitely: PostgreSQL's default, and the advice against.
const NoLockTimeout = hot.NoLockTimeout

// ColdOptions configure the Iceberg tier. Zero values mean the defaults.
type ColdOptions struct {
	// Namespace holds the tables; default "meterstore".
	Namespace string
	// RowGroupRows and RowGroupBytes bound a Parquet row group, and so the
	// memory an archival needs per open file (default 1Mi rows, 64 MiB).
	RowGroupRows  int
	RowGroupBytes int64
	// TargetFileSize is the size at which a data file is closed (256 MiB).
	TargetFileSize int64
	// ZstdLevel is the zstd level of the data files (3).
	ZstdLevel int
	// BloomBytes is the size of each bloom filter, per column and row
	// group (32 KiB).
	BloomBytes int
	// BatchRows is the number of readings per Arrow batch (8192).
	BatchRows int
}

// ArchiveOptions configure archival, the same for every table.
type ArchiveOptions struct {
	// SettlementLag is how long after its end a window is still being
	// corrected; it is archived only afterwards.
	SettlementLag time.Duration
	// Step is the span of one archival window: a whole number of days, at
	// least 31 days for tables of monthly partitions.
	Step time.Duration
	// MaxWindowsPerCycle bounds the windows one cycle archives; zero
	// means 31.
	MaxWindowsPerCycle int
	// ReaderGrace is how long a detached partition is kept after the
	// commit that covered it, for readers that planned before it.
	ReaderGrace time.Duration
	// ChunkRows is the number of rows fetched from a detached partition
	// at a time; zero means 10,000.
	ChunkRows int
}

// QueryOptions bound the query engine.
type QueryOptions struct {
	// MemoryLimit is DuckDB's memory_limit, such as "2GB"; empty means
	// DuckDB's default, 80% of the machine's memory.
	MemoryLimit string
	// Threads is the number of DuckDB threads; 0 means one per core.
	Threads int
	// CacheDir is where a query spills and remote data files are copied;
	// empty means a query that outgrows MemoryLimit fails.
	CacheDir string
	// CacheBytes bounds the copies of remote data files in CacheDir: past
	// it a new copy removes those used longest ago, but none used within
	// the last hour or Timeout, whichever is longer. Zero means
	// DefaultCacheBytes.
	CacheBytes int64
	// MaxRows bounds the rows of a result; zero means 1,000,000.
	MaxRows int
	// MaxResultBytes bounds the approximate bytes a result holds in this
	// process's memory, which MemoryLimit (DuckDB's) does not cover; a
	// larger result fails with ErrResultTooLarge. Zero means 1 GiB.
	MaxResultBytes int64
	// Timeout bounds each query; DuckDB is interrupted when it passes and
	// the query fails with ErrQueryTimeout. Zero means 5 minutes,
	// NoQueryTimeout none.
	Timeout time.Duration
	// VerifyDigests reads every cold data file a query plans whole, before
	// the query reads it, and compares its SHA-256 with the digest its
	// commit recorded, so that an altered file of the same size is refused
	// (ErrAlteredFile) before any verification ran. Every file is read
	// twice; off, only a file's size is compared.
	VerifyDigests bool
	// DeliveryLag is how long after a balancing day ends its deliveries
	// are due; the relation completeness counts missing intervals only on
	// days that are due at the query's ReadOptions.Now.
	DeliveryLag time.Duration
	// FooterCacheBytes bounds the Parquet footers and page indexes the
	// typed series reads (SeriesReadings, LatestReading, Gaps) keep per
	// cold data file, by their serialized bytes; the least recently used
	// go first. Zero means DefaultFooterCacheBytes, a negative value keeps
	// none.
	FooterCacheBytes int64
	// SystemTablesMaxAge is how old, by the wall clock, the system tables a
	// statement that names them sees may be; one older is computed anew
	// first, which reads the status of both tiers. Zero means
	// DefaultSystemTablesMaxAge.
	SystemTablesMaxAge time.Duration
}

// DefaultFooterCacheBytes is QueryOptions.FooterCacheBytes when it is
// zero: 64 MiB.
const DefaultFooterCacheBytes = cold.DefaultFooterCacheBytes

// DefaultCacheBytes is QueryOptions.CacheBytes when it is zero: 10 GiB.
const DefaultCacheBytes = cold.DefaultCopyBytes

// DefaultQueryTimeout is QueryOptions.Timeout when it is zero.
const DefaultQueryTimeout = 5 * time.Minute

// NoQueryTimeout, as QueryOptions.Timeout, lets a query run as long as it
// takes.
const NoQueryTimeout time.Duration = -1

// SnapshotRetention says which snapshots expiry keeps: those committed
// within MaxAge of now (zero: ten calendar years) and the KeepLast newest
// (zero: 100).
type SnapshotRetention struct {
	MaxAge   time.Duration
	KeepLast int
}

func (o HotOptions) tier(log *slog.Logger, reads *pgxpool.Pool) hot.Options {
	return hot.Options{Schema: o.Schema, DDLLockTimeout: o.DDLLockTimeout, Logger: log, ReadPool: reads}
}

func (o ColdOptions) tier(log *slog.Logger) cold.Options {
	return cold.Options{
		Namespace: o.Namespace, RowGroupRows: o.RowGroupRows, RowGroupBytes: o.RowGroupBytes,
		TargetFileSize: o.TargetFileSize, ZstdLevel: o.ZstdLevel, BloomBytes: o.BloomBytes,
		BatchRows: o.BatchRows, Logger: log,
	}
}

func (o ArchiveOptions) config(log *slog.Logger) archive.Config {
	return archive.Config{
		SettlementLag: o.SettlementLag, Step: o.Step, MaxWindowsPerCycle: o.MaxWindowsPerCycle,
		ReaderGrace: o.ReaderGrace, ChunkRows: o.ChunkRows, Logger: log,
	}
}

func (o QueryOptions) settings() query.Settings {
	timeout := o.Timeout
	switch {
	case timeout == 0:
		timeout = DefaultQueryTimeout
	case timeout == NoQueryTimeout:
		timeout = 0
	}
	return query.Settings{MemoryLimit: o.MemoryLimit, Threads: o.Threads, CacheDir: o.CacheDir, MaxRows: o.MaxRows,
		MaxResultBytes: o.MaxResultBytes, Timeout: timeout, DeliveryLag: o.DeliveryLag}
}

// timeout returns the bound of one query, zero for none.
func (o QueryOptions) timeout() time.Duration {
	switch o.Timeout {
	case 0:
		return DefaultQueryTimeout
	case NoQueryTimeout:
		return 0
	}
	return o.Timeout
}

func (r SnapshotRetention) retention() cold.Retention {
	return cold.Retention{MaxAge: r.MaxAge, KeepLast: r.KeepLast}
}

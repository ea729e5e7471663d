package config

import (
	"time"

	"github.com/meterstore/meterstore/consensus/postgres"
	"github.com/meterstore/meterstore/series"
)

// A Config is a deployment's settings, as Load or Parse read them from its
// TOML file. Its fields mirror the file's sections; its methods convert them
// into the options of the packages they configure.
type Config struct {
	Postgres    Postgres
	Warehouse   Warehouse
	Catalog     Catalog
	Hot         Hot
	Archive     Archive
	Cold        Cold
	Maintenance Maintenance
	Retention   RetentionPolicy
	Query       Query
	Server      Server

	tables []series.Table // the [[table]] declarations; see Tables
}

// Postgres is the file's postgres section: the database of the hot tier.
type Postgres struct {
	// URL is a connection URL or key=value DSN (postgres.url); empty means
	// a private cluster started in DataDir/pg. It may hold a password: do
	// not log it.
	URL string
	// Schema holds the hot tables and the catalog's PostgreSQL log
	// (postgres.schema).
	Schema string
	// DataDir is the deployment's local directory, absolute
	// (postgres.data_dir).
	DataDir string
}

// Warehouse is the file's warehouse section: the object store of the cold
// tier.
type Warehouse struct {
	// URL is the warehouse's blob URL (warehouse.url): file:// with an
	// absolute path, s3://, gs://, azblob:// or mem://.
	URL string
	// Namespace is the Iceberg namespace of the tables
	// (warehouse.namespace).
	Namespace string
}

// Catalog is the file's catalog section: which Iceberg catalog keeps the
// tables, and where MeterStore's own catalog logs its commits.
type Catalog struct {
	// Type is "log" (MeterStore's catalog on its own log, the default),
	// "rest" (an Iceberg REST catalog at URI) or "sql" (iceberg-go's SQL
	// catalog in the PostgreSQL database at URI) (catalog.type).
	Type string
	// URI is the REST catalog's base URL, or the SQL catalog's database
	// URL; for "sql" empty means postgres.url (catalog.uri).
	URI string
	// Log is "postgres" (a table in Postgres.Schema) or "object_store"
	// (objects in the warehouse's bucket, written with PutIfAbsent)
	// (catalog.log).
	Log string
	// Isolation is the transaction isolation of the PostgreSQL log
	// (catalog.isolation).
	Isolation postgres.Isolation
}

// Hot is the file's hot section: the PostgreSQL tier.
type Hot struct {
	// DDLLockTimeout bounds how long a DDL statement waits for its lock
	// (hot.ddl_lock_timeout); zero disables the bound.
	DDLLockTimeout time.Duration
	// AcceptAhead bounds how far past now a write creates the missing
	// partition of a row; a later row is refused (hot.accept_ahead).
	AcceptAhead time.Duration
}

// Archive is the file's archive section: when and how windows move from
// the hot tier to the cold one.
type Archive struct {
	SettlementLag      time.Duration // archive.settlement_lag
	Step               time.Duration // archive.archival_step
	MaxWindowsPerCycle int           // archive.max_windows_per_cycle
	ReaderGrace        time.Duration // archive.reader_grace
	ChunkRows          int           // archive.chunk_rows
}

// Cold is the file's cold section: the Parquet files of the cold tier.
type Cold struct {
	RowGroupRows   int   // cold.row_group_rows
	RowGroupBytes  int64 // cold.row_group_bytes
	TargetFileSize int64 // cold.target_file_size
	ZstdLevel      int   // cold.zstd_level
	BloomBytes     int   // cold.bloom_bytes
	BatchRows      int   // cold.batch_rows
}

// Maintenance is the file's maintenance section: the schedule of the
// maintenance loop, what snapshot expiry keeps and when compaction runs.
type Maintenance struct {
	Interval          time.Duration // maintenance.interval
	ExpireSnapshots   bool          // maintenance.expire_snapshots
	SnapshotRetention time.Duration // maintenance.snapshot_retention
	MinSnapshots      int           // maintenance.min_snapshots
	// RemoveOrphansAfter is the safety age of the loop's daily orphan
	// file removal; zero turns it off (maintenance.remove_orphans_after).
	RemoveOrphansAfter time.Duration
	Compact            bool // maintenance.compact
	CompactManifests   int  // maintenance.compact_manifests
	CompactSmallFiles  int  // maintenance.compact_small_files
	// MaxClockSkew is how far past the wall clock a now given to
	// archival, maintenance or status may lie (maintenance.max_clock_skew).
	MaxClockSkew time.Duration
}

// RetentionPolicy is the file's retention section: the § 60 Abs. 6 MsbG
// sweep, which unlinks subjects whose readings are due for erasure.
type RetentionPolicy struct {
	// Kind is "" (no sweep), "calendar_years" or "rolling"
	// (retention.policy).
	Kind string
	// Years counts the calendar years after the end of the year of
	// collection, for Kind "calendar_years".
	Years int
	// Rolling is the age at which a value comes due, for Kind "rolling".
	Rolling    time.Duration
	LegalBasis string // retention.legal_basis
	Actor      string // retention.actor
	// SubjectKey keys the hashes of the erased subjects' suppression list
	// (retention.subject_key): at least 32 bytes, kept outside the
	// database. Empty: erasures are refused.
	SubjectKey Secret
}

// Query is the file's query section: the DuckDB session that reads both
// tiers.
type Query struct {
	// MemoryLimit is DuckDB's memory_limit, such as "2GB"; empty leaves
	// DuckDB's default (query.memory_limit).
	MemoryLimit string
	// Threads is DuckDB's threads; zero leaves DuckDB's default
	// (query.threads).
	Threads int
	// MaxRows bounds a result, which is held in memory (query.max_rows).
	MaxRows int
	// MaxResultBytes bounds the approximate bytes a result holds in the
	// process's memory, beside DuckDB's MemoryLimit
	// (query.max_result_bytes).
	MaxResultBytes int64
	// Timeout bounds each query; zero means none (query.timeout).
	Timeout time.Duration
	// CacheDir is where remote Parquet files are cached, absolute
	// (query.cache_dir).
	CacheDir string
	// CacheBytes bounds the copies of remote data files in CacheDir; those
	// used within the last hour stay beyond it (query.cache_bytes).
	CacheBytes int64
	// VerifyDigests compares every cold data file's SHA-256 with its
	// recorded digest before a query reads it (query.verify_digests).
	VerifyDigests bool
	// DeliveryLag is how long after a balancing day ends its deliveries
	// are due: the relation completeness counts a day's missing intervals
	// only from then (query.delivery_lag).
	DeliveryLag time.Duration
	// SystemTablesMaxAge is how old the system tables a statement sees
	// may be before it computes them anew (query.system_tables_max_age).
	SystemTablesMaxAge time.Duration
	// FooterCacheBytes bounds the Parquet footers and page indexes the
	// typed series reads keep per cold data file, by their serialized
	// bytes (query.footer_cache_bytes); 0 keeps none.
	FooterCacheBytes int64
}

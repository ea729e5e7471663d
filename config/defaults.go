package config

import (
	"time"

	"github.com/meterstore/meterstore/series"
)

// The values of the keys a file leaves out. Template writes the same
// values, and tests hold the two together, and these together with the
// defaults of the tiers they configure (store's TestConfigDefaults): the
// package imports no tier.
const (
	defaultSchema            = "meterstore"
	defaultDataDir           = "meterstore-data"
	defaultWarehouse         = "file://meterstore-data/warehouse"
	defaultNamespace         = "meterstore"
	defaultLog               = "postgres"
	defaultCatalogType       = "log"
	defaultMaxRows           = 1_000_000
	defaultMaxResultBytes    = 1 << 30 // 1GiB
	defaultQueryTimeout      = 5 * time.Minute
	defaultSystemAge         = 10 * time.Second
	defaultFooterCacheBytes  = 64 << 20 // 64MiB
	defaultDDLLockTimeout    = 3 * time.Second
	defaultAcceptAhead       = 7 * day
	defaultSettlementLag     = 45 * day
	defaultStep              = day
	defaultReaderGrace       = time.Hour
	defaultInterval          = 15 * time.Minute
	defaultSnapshotRetention = 3653 * day // ten years, leap days included
	defaultLegalBasis        = "§ 60 Abs. 6 MsbG"
	minSubjectKeyLen         = 32 // privacy.MinSubjectKeyLen, which config does not import
	defaultActor             = "retention-job"
	defaultMemoryLimit       = "2GB"
	defaultThreads           = 2
	defaultCacheDir          = "cache"  // under data_dir
	defaultCacheBytes        = 10 << 30 // 10GiB
	defaultHeadroom          = 7 * day
	defaultMaxWindows        = 31
	defaultChunkRows         = 4_096
	defaultRowGroupRows      = 1 << 20
	defaultRowGroupBytes     = 64 << 20
	defaultTargetFileSize    = 256 << 20
	defaultZstdLevel         = 3
	defaultBloomBytes        = 32 << 10
	defaultBatchRows         = 8192
	defaultMinSnapshots      = 100
	defaultOrphanAge         = 3 * day
	minOrphanAge             = time.Hour
	defaultCompactManifests  = 16
	defaultCompactSmallFiles = 8
	defaultMaxClockSkew      = day
	defaultListen            = "127.0.0.1:8080"
	defaultReadTimeout       = 30 * time.Second
	defaultWriteTimeout      = 5 * time.Minute
	defaultShutdownTimeout   = 30 * time.Second
	defaultMaxBodyBytes      = 256 << 20
)

// The bounds of the sizes and counts a file may set: what one deployment
// can do, so that check refuses a value that would only fail later (a
// headroom of decades creating partitions for minutes, a memory limit no
// query fits in, a row group no machine can buffer).
const (
	maxDailyHeadroom   = 366 * day   // a year of daily partitions
	maxMonthlyHeadroom = 1096 * day  // three years of monthly ones
	minMemoryLimit     = 64 << 20    // DuckDB cannot plan a query in less
	maxMemoryLimit     = 1 << 40     // 1 TiB
	minResultBytes     = 1 << 20     // query.max_result_bytes: below it no useful result fits
	minRowGroupBytes   = 1 << 20     // 1 MiB
	maxRowGroupBytes   = 1 << 30     // 1 GiB, buffered per open file
	maxRowGroupRows    = 64 << 20    // 64 Mi rows
	minFileSize        = 1 << 20     // 1 MiB
	minCacheBytes      = 1 << 20     // query.cache_bytes: 1 MiB
	maxCacheBytes      = 1 << 50     // 1 PiB
	maxFileSize        = 16 << 30    // 16 GiB
	maxBloomBytes      = 128 << 20   // 128 MiB per column and row group
	maxBatchRows       = 1 << 20     // 1 Mi readings per Arrow batch
	maxChunkRows       = 1_000_000   // rows read from a partition at a time
	maxWindows         = 1000        // windows per cycle
	maxThreads         = 1024        // DuckDB threads
	maxMaxRows         = 100_000_000 // a result is held in memory
	maxMinSnapshots    = 1_000_000   // snapshots expiry keeps
	maxCompactAt       = 100_000     // manifests or small files before a compaction
	maxClockSkew       = 366 * day   // how far past the wall clock now may lie
	maxAcceptAhead     = 1096 * day  // hot.accept_ahead: three years of partitions
	maxSettlementLag   = 1096 * day  // archive.settlement_lag: three years of partitions
	// The bounds of durations that had none, so that check refuses a
	// typo of 100000d instead of a deployment living with it.
	maxDDLLockTimeout = 10 * time.Minute // hot.ddl_lock_timeout: the whole table stalls for as long
	maxReaderGrace    = 7 * day          // archive.reader_grace: archived partitions kept in PostgreSQL
	maxQueryTimeout   = day              // query.timeout: one statement
	maxDeliveryLag    = 366 * day        // query.delivery_lag
	maxSystemAge      = time.Hour        // query.system_tables_max_age
	maxRetention      = 36525 * day      // maintenance.snapshot_retention: a century
	maxOrphanAge      = 366 * day        // maintenance.remove_orphans_after
	maxReadTimeout    = time.Hour        // server.read_timeout: one request's headers and body
	maxWriteTimeout   = day              // server.write_timeout: one response, a streamed result too
	minBodyBytes      = 1 << 10          // server.max_body_bytes: below it no request fits
	maxBodyBytes      = 64 << 30         // 64 GiB, one delivery
)

// maxHeadroom returns the longest headroom of partitions of width w.
func maxHeadroom(w series.Width) time.Duration {
	if w == series.Monthly {
		return maxMonthlyHeadroom
	}
	return maxDailyHeadroom
}

package config

import "time"

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
	defaultDDLLockTimeout    = 3 * time.Second
	defaultSettlementLag     = 45 * day
	defaultStep              = day
	defaultReaderGrace       = time.Hour
	defaultInterval          = 15 * time.Minute
	defaultSnapshotRetention = 3653 * day // ten years, leap days included
	defaultLegalBasis        = "§ 60 Abs. 6 MsbG"
	defaultActor             = "retention-job"
	defaultMemoryLimit       = "2GB"
	defaultThreads           = 2
	defaultCacheDir          = "cache" // under data_dir
	defaultHeadroom          = 7 * day
	defaultMaxWindows        = 31
	defaultChunkRows         = 10_000
	defaultRowGroupRows      = 1 << 20
	defaultRowGroupBytes     = 64 << 20
	defaultTargetFileSize    = 256 << 20
	defaultZstdLevel         = 3
	defaultBloomBytes        = 32 << 10
	defaultBatchRows         = 8192
	defaultMinSnapshots      = 100
)

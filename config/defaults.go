package config

import "time"

// The values of the keys a file leaves out, where the package they
// configure has no default of its own to reuse. Template writes the same
// values, and a test holds the two together.
const (
	defaultSchema            = "meterstore"
	defaultDataDir           = "meterstore-data"
	defaultWarehouse         = "file://meterstore-data/warehouse"
	defaultNamespace         = "meterstore"
	defaultLog               = "postgres"
	defaultCatalogType       = "log"
	defaultMaxRows           = 1_000_000
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
)

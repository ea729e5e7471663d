package store

import (
	"fmt"

	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/consensus/postgres"
	"github.com/meterstore/meterstore/privacy"
)

// OptionsFrom returns the options cfg describes, without the pool, the
// catalog, the registry and the logger, which OpenConfig opens.
func OptionsFrom(cfg *config.Config) Options {
	timeout := cfg.Hot.DDLLockTimeout
	if timeout == 0 {
		timeout = NoLockTimeout // a configuration's "0s" disables the bound
	}
	queryTimeout := cfg.Query.Timeout
	if queryTimeout == 0 {
		queryTimeout = NoQueryTimeout // a configuration's "0s" means no timeout
	}
	return Options{
		Tables: cfg.Tables(),
		Hot:    HotOptions{Schema: cfg.Postgres.Schema, DDLLockTimeout: timeout, AcceptAhead: cfg.Hot.AcceptAhead},
		Cold: ColdOptions{
			Namespace:      cfg.Warehouse.Namespace,
			RowGroupRows:   cfg.Cold.RowGroupRows,
			RowGroupBytes:  cfg.Cold.RowGroupBytes,
			TargetFileSize: cfg.Cold.TargetFileSize,
			ZstdLevel:      cfg.Cold.ZstdLevel,
			BloomBytes:     cfg.Cold.BloomBytes,
			BatchRows:      cfg.Cold.BatchRows,
		},
		Archive: ArchiveOptions{
			SettlementLag:      cfg.Archive.SettlementLag,
			Step:               cfg.Archive.Step,
			MaxWindowsPerCycle: cfg.Archive.MaxWindowsPerCycle,
			ReaderGrace:        cfg.Archive.ReaderGrace,
			ChunkRows:          cfg.Archive.ChunkRows,
		},
		Query: QueryOptions{
			MemoryLimit: cfg.Query.MemoryLimit, Threads: cfg.Query.Threads,
			CacheDir: cfg.Query.CacheDir, CacheBytes: cfg.Query.CacheBytes, MaxRows: cfg.Query.MaxRows,
			MaxResultBytes: cfg.Query.MaxResultBytes, Timeout: queryTimeout,
			VerifyDigests:      cfg.Query.VerifyDigests,
			DeliveryLag:        cfg.Query.DeliveryLag,
			SystemTablesMaxAge: cfg.Query.SystemTablesMaxAge,
			FooterCacheBytes:   footerCacheBytes(cfg.Query.FooterCacheBytes),
		},
		Snapshots: SnapshotRetention{MaxAge: cfg.Maintenance.SnapshotRetention, KeepLast: cfg.Maintenance.MinSnapshots},
		Now:       NowOptions{MaxClockSkew: cfg.Maintenance.MaxClockSkew},
	}
}

// logOptions returns the options of the catalog's log in PostgreSQL.
func logOptions(cfg *config.Config) postgres.Options {
	return postgres.Options{Schema: cfg.Postgres.Schema, Isolation: cfg.Catalog.Isolation}
}

// CheckConfig reports what cfg asks of the tiers that they would refuse:
// archival settings that do not fit a table's partition width, say. The
// config package checks a file on its own; this is the check against
// what the tiers accept, which Open applies too.
func CheckConfig(cfg *config.Config) error {
	o := OptionsFrom(cfg)
	a := o.Archive.config(nil)
	for _, t := range o.Tables {
		if err := a.ValidateFor(t.Width); err != nil {
			return fmt.Errorf("store: table %s: %w", t.Name, err)
		}
	}
	return a.Validate()
}

// Retention returns the retention sweep cfg configures; a zero Retention
// when the sweep is off.
func Retention(cfg *config.Config) privacy.Retention {
	switch cfg.Retention.Kind {
	case "calendar_years":
		return privacy.CalendarYears(cfg.Retention.Years)
	case "rolling":
		return privacy.Rolling(cfg.Retention.Rolling)
	}
	return privacy.Retention{}
}

// MaintenanceFor returns the maintenance loop cfg configures for s.
func (s *Store) MaintenanceFor(cfg *config.Config) *Maintenance {
	m := s.Maintenance().Interval(cfg.Maintenance.Interval).ExpireSnapshots(cfg.Maintenance.ExpireSnapshots).
		RemoveOrphans(cfg.Maintenance.RemoveOrphansAfter).
		Compact(cfg.Maintenance.Compact, CompactOptions{ManifestsOver: cfg.Maintenance.CompactManifests, SmallFilesOver: cfg.Maintenance.CompactSmallFiles, Settled: true})
	if r := Retention(cfg); !r.IsZero() {
		m.AnonymiseAfter(r, cfg.Retention.LegalBasis, cfg.Retention.Actor)
	}
	return m
}

// footerCacheBytes maps query.footer_cache_bytes, where 0 keeps none, to
// QueryOptions.FooterCacheBytes, where a negative value does.
func footerCacheBytes(n int64) int64 {
	if n == 0 {
		return -1
	}
	return n
}

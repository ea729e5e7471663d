package config

import (
	"slices"

	"github.com/meterstore/meterstore/consensus/postgres"
	"github.com/meterstore/meterstore/internal/archive"
	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/series"
)

// HotOptions returns the options of the hot tier; the caller sets Logger.
func (c *Config) HotOptions() hot.Options {
	timeout := c.Hot.DDLLockTimeout
	if timeout == 0 {
		timeout = hot.NoLockTimeout
	}
	return hot.Options{Schema: c.Postgres.Schema, DDLLockTimeout: timeout}
}

// LogOptions returns the options of the catalog's log on PostgreSQL, for a
// Catalog.Log of "postgres".
func (c *Config) LogOptions() postgres.Options {
	return postgres.Options{Schema: c.Postgres.Schema, Isolation: c.Catalog.Isolation}
}

// ArchiveConfig returns the configuration of archival; the caller sets
// Logger.
func (c *Config) ArchiveConfig() archive.Config {
	return archive.Config{
		SettlementLag:      c.Archive.SettlementLag,
		Step:               c.Archive.Step,
		MaxWindowsPerCycle: c.Archive.MaxWindowsPerCycle,
		ReaderGrace:        c.Archive.ReaderGrace,
		ChunkRows:          c.Archive.ChunkRows,
	}
}

// ColdOptions returns the options of the cold tier; the caller sets Logger.
func (c *Config) ColdOptions() cold.Options {
	return cold.Options{
		Namespace:      c.Warehouse.Namespace,
		RowGroupRows:   c.Cold.RowGroupRows,
		RowGroupBytes:  c.Cold.RowGroupBytes,
		TargetFileSize: c.Cold.TargetFileSize,
		ZstdLevel:      c.Cold.ZstdLevel,
		BloomBytes:     c.Cold.BloomBytes,
		BatchRows:      c.Cold.BatchRows,
	}
}

// SnapshotRetention returns what snapshot expiry keeps.
func (c *Config) SnapshotRetention() cold.Retention {
	return cold.Retention{MaxAge: c.Maintenance.SnapshotRetention, KeepLast: c.Maintenance.MinSnapshots}
}

// Tables returns the declared tables, in file order. They are copies: the
// caller may change them without changing c.
func (c *Config) Tables() []series.Table {
	out := make([]series.Table, len(c.tables))
	for i, t := range c.tables {
		t.Resolutions = slices.Clone(t.Resolutions)
		t.Columns = slices.Clone(t.Columns)
		for j := range t.Columns {
			t.Columns[j].Values = slices.Clone(t.Columns[j].Values)
		}
		out[i] = t
	}
	return out
}

package store

import (
	"reflect"
	"testing"
	"time"

	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/consensus/postgres"
	"github.com/meterstore/meterstore/internal/archive"
	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/internal/query"
)

const day = 24 * time.Hour

// TestConfigDefaults holds the configuration's defaults, which the
// template writes, to the tiers' own: a file that leaves a key out and a
// zero option configure the same thing.
func TestConfigDefaults(t *testing.T) {
	c := config.Default()
	o := OptionsFrom(c)
	if got, want := o.Cold.tier(nil), (cold.Options{
		Namespace: cold.DefaultNamespace, RowGroupRows: cold.DefaultRowGroupRows, RowGroupBytes: cold.DefaultRowGroupBytes,
		TargetFileSize: cold.DefaultTargetFileSize, ZstdLevel: cold.DefaultZstdLevel, BloomBytes: cold.DefaultBloomBytes,
		BatchRows: cold.DefaultBatchRows,
	}); !reflect.DeepEqual(got, want) {
		t.Errorf("cold options %+v; want %+v", got, want)
	}
	if got, want := o.Hot.tier(nil, nil), (hot.Options{Schema: "meterstore", DDLLockTimeout: hot.DefaultDDLLockTimeout}); !reflect.DeepEqual(got, want) {
		t.Errorf("hot options %+v; want %+v", got, want)
	}
	if got, want := o.Archive.config(nil), (archive.Config{SettlementLag: 45 * day, Step: day, MaxWindowsPerCycle: archive.DefaultMaxWindowsPerCycle,
		ReaderGrace: time.Hour, ChunkRows: archive.DefaultChunkRows}); !reflect.DeepEqual(got, want) {
		t.Errorf("archive config %+v; want %+v", got, want)
	}
	if got, want := o.Snapshots.retention(), (cold.Retention{MaxAge: 3653 * day, KeepLast: cold.DefaultKeepLast}); got != want {
		t.Errorf("snapshot retention %+v; want %+v", got, want)
	}
	if got, want := o.Hot.AcceptAhead, DefaultAcceptAhead; got != want {
		t.Errorf("accept ahead %v; want %v", got, want)
	}
	if got, want := o.Now.skew(), DefaultMaxClockSkew; got != want || o.Now.MaxClockSkew != want {
		t.Errorf("max clock skew %v; want %v", got, want)
	}
	if got, want := o.Query.MaxRows, 1_000_000; got != want {
		t.Errorf("max rows %d; want %d", got, want)
	}
	if got, want := o.Query.CacheBytes, int64(DefaultCacheBytes); got != want {
		t.Errorf("cache bytes %d; want %d", got, want)
	}
	if got, want := o.Query.settings(), (query.Settings{MemoryLimit: "2GB", Threads: 2, CacheDir: c.Query.CacheDir, MaxRows: 1_000_000,
		MaxResultBytes: query.DefaultMaxResultBytes, Timeout: DefaultQueryTimeout}); got != want {
		t.Errorf("query settings %+v; want %+v", got, want)
	}
	if got := (QueryOptions{}).settings(); got.Timeout != DefaultQueryTimeout {
		t.Errorf("a zero QueryOptions.Timeout: %v; want %v", got.Timeout, DefaultQueryTimeout)
	}
	// Ten calendar years never hold more than 3653 days.
	for y := 2000; y < 2100; y++ {
		from := time.Date(y, time.March, 1, 0, 0, 0, 0, time.UTC)
		if span := from.AddDate(cold.DefaultRetentionYears, 0, 0).Sub(from); span > c.Maintenance.SnapshotRetention {
			t.Fatalf("ten years from %v are %v, more than the retention %v", from, span, c.Maintenance.SnapshotRetention)
		}
	}
	if got, want := logOptions(c), (postgres.Options{Schema: "meterstore", Isolation: postgres.ReadCommitted}); got != want {
		t.Errorf("log options %+v; want %+v", got, want)
	}
	for _, tbl := range c.Tables() {
		if err := tbl.Validate(); err != nil {
			t.Errorf("template table %s: %v", tbl.Name, err)
		}
	}
	if err := CheckConfig(c); err != nil {
		t.Errorf("the template: %v", err)
	}
}

// TestConfigNoLockTimeout: a configuration's "0s" disables the DDL lock
// timeout, where a zero HotOptions.DDLLockTimeout means the default.
func TestConfigNoLockTimeout(t *testing.T) {
	c, err := config.Parse([]byte("[hot]\nddl_lock_timeout = \"0s\"\n"), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := OptionsFrom(c).Hot.tier(nil, nil).DDLLockTimeout; got != hot.NoLockTimeout {
		t.Errorf("DDLLockTimeout %v; want NoLockTimeout", got)
	}
	// So does a query timeout of "0s".
	c, err = config.Parse([]byte("[query]\ntimeout = \"0s\"\nmax_result_bytes = \"8MiB\"\n"), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := OptionsFrom(c).Query.settings(); got.Timeout != 0 || got.MaxResultBytes != 8<<20 {
		t.Errorf("timeout 0s, max_result_bytes 8MiB: settings %+v; want no timeout and 8 MiB", got)
	}
}

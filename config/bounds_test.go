package config

import (
	"strings"
	"testing"
)

// TestBounds: every size and count is bounded by what a deployment can
// do, and connection strings are parsed, so that `meterstore check`
// refuses what would break a command later: a headroom of 20000d (3,883
// partitions in 120 s and counting), a memory limit no query fits in, a
// row group no machine can buffer, a PostgreSQL URL that fails at open; and
// that a deployment's schema and directories are its own, not PostgreSQL's
// or the operating system's.
func TestBounds(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		key  string
		want string
	}{
		{"daily headroom of decades", "[[table]]\nname = \"a\"\nheadroom = \"20000d\"\n", "table[0].headroom", "at most 366d"},
		{"monthly headroom of decades", "[archive]\nsettlement_lag = \"62d\"\narchival_step = \"31d\"\n[[table]]\nname = \"a\"\nwidth = \"monthly\"\nheadroom = \"4000d\"\n", "table[0].headroom", "at most 1096d"},
		{"tiny memory limit", "[query]\nmemory_limit = \"1KB\"\n", "query.memory_limit", "at least 64MiB"},
		{"huge memory limit", "[query]\nmemory_limit = \"2000TiB\"\n", "query.memory_limit", "at most 1TiB"},
		{"huge row group", "[cold]\nrow_group_bytes = \"999999TiB\"\n", "cold.row_group_bytes", "at most 1GiB"},
		{"tiny row group", "[cold]\nrow_group_bytes = \"1KiB\"\n", "cold.row_group_bytes", "at least 1MiB"},
		{"row group of too many rows", "[cold]\nrow_group_rows = 1099511627776\n", "cold.row_group_rows", "want 1 to 67108864"},
		{"huge data files", "[cold]\ntarget_file_size = \"1TiB\"\n", "cold.target_file_size", "at most 16GiB"},
		{"tiny data files", "[cold]\ntarget_file_size = \"1KiB\"\n", "cold.target_file_size", "at least 1MiB"},
		{"huge bloom filter", "[cold]\nbloom_bytes = \"1GiB\"\n", "cold.bloom_bytes", "at most 128MiB"},
		{"huge Arrow batch", "[cold]\nbatch_rows = 100000000\n", "cold.batch_rows", "want 1 to 1048576"},
		{"huge chunk", "[archive]\nchunk_rows = 1000000000\n", "archive.chunk_rows", "want 1 to 1000000"},
		{"windows without end", "[archive]\nmax_windows_per_cycle = 1000000\n", "archive.max_windows_per_cycle", "want 1 to 1000"},
		{"threads of a data centre", "[query]\nthreads = 100000\n", "query.threads", "want 0 to 1024"},
		{"results no memory holds", "[query]\nmax_rows = 1000000000000\n", "query.max_rows", "want 1 to 100000000"},
		{"snapshots without end", "[maintenance]\nmin_snapshots = 1000000000\n", "maintenance.min_snapshots", "want 1 to 1000000"},
		{"compaction after every commit", "[maintenance]\ncompact_manifests = 0\n", "maintenance.compact_manifests", "want 1 to 100000"},
		{"compaction never due", "[maintenance]\ncompact_small_files = 1000000\n", "maintenance.compact_small_files", "want 1 to 100000"},
		{"no clock skew", "[maintenance]\nmax_clock_skew = \"0s\"\n", "maintenance.max_clock_skew", "want a positive duration, at most 366d"},
		{"clock skew of years", "[maintenance]\nmax_clock_skew = \"1000d\"\n", "maintenance.max_clock_skew", "at most 366d"},
		{"orphans removed while committed", "[maintenance]\nremove_orphans_after = \"10m\"\n", "maintenance.remove_orphans_after", "want 0s (off) or at least 1h"},
		{"malformed postgres URL", "[postgres]\nurl = \"postgres://ms:secret@db:port/meters\"\n", "postgres.url", "cannot parse"},
		{"malformed postgres DSN", "[postgres]\nurl = \"host=db port=notanumber\"\n", "postgres.url", "cannot parse"},
		{"not a postgres URL", "[postgres]\nurl = \"http://db/meters\"\n", "postgres.url", "cannot parse"},
		{"malformed sql catalog URI", "[catalog]\ntype = \"sql\"\nuri = \"postgres://ms@db:port/catalog\"\n", "catalog.uri", "cannot parse"},
		{"settlement lag of centuries", "[archive]\nsettlement_lag = \"100000d\"\n", "archive.settlement_lag", "at most 1096d"},
		{"shutdown of a century", "[server]\nshutdown_timeout = \"1000000h\"\n", "server.shutdown_timeout", "at most 1h"},
		{"reader grace of centuries", "[archive]\nreader_grace = \"100000d\"\n", "archive.reader_grace", "100000d: want at most 7d"},
		{"DDL lock wait of centuries", "[hot]\nddl_lock_timeout = \"100000d\"\n", "hot.ddl_lock_timeout", "100000d: want at most 10m"},
		{"query timeout of centuries", "[query]\ntimeout = \"100000d\"\n", "query.timeout", "want at most 1d"},
		{"delivery lag of centuries", "[query]\ndelivery_lag = \"100000d\"\n", "query.delivery_lag", "want at most 366d"},
		{"system tables computed for every statement", "[query]\nsystem_tables_max_age = \"0s\"\n", "query.system_tables_max_age", "want a positive duration"},
		{"system tables a day old", "[query]\nsystem_tables_max_age = \"1d\"\n", "query.system_tables_max_age", "want at most 1h"},
		{"retention past a century", "[maintenance]\nsnapshot_retention = \"100000d\"\n", "maintenance.snapshot_retention", "want at most 36525d"},
		{"orphans kept for centuries", "[maintenance]\nremove_orphans_after = \"100000d\"\n", "maintenance.remove_orphans_after", "want at most 366d"},
		{"read timeout of centuries", "[server]\nread_timeout = \"100000d\"\n", "server.read_timeout", "want at most 1h"},
		{"write timeout of centuries", "[server]\nwrite_timeout = \"100000d\"\n", "server.write_timeout", "want at most 1d"},
		{"the system catalog as schema", "[postgres]\nschema = \"pg_catalog\"\n", "postgres.schema", "PostgreSQL system schema"},
		{"a pg_ schema", "[postgres]\nschema = \"pg_meters\"\n", "postgres.schema", "PostgreSQL system schema"},
		{"the information schema", "[postgres]\nschema = \"information_schema\"\n", "postgres.schema", "PostgreSQL system schema"},
		{"the root as data directory", "[postgres]\ndata_dir = \"/\"\n", "postgres.data_dir", "filesystem root"},
		{"a data directory in /usr", "[postgres]\ndata_dir = \"/usr/local/meterstore\"\n", "postgres.data_dir", `"/usr/local/meterstore" is in /usr`},
		{"the root, spelt otherwise", "[postgres]\ndata_dir = \"../../..\"\n", "postgres.data_dir", "filesystem root"},
		{"/etc as cache", "[query]\ncache_dir = \"/etc\"\n", "query.cache_dir", `"/etc" is in /etc, which holds the system's configuration`},
		{"a cache in /proc", "[query]\ncache_dir = \"/proc/self\"\n", "query.cache_dir", "is in /proc"},
		{"a warehouse in /boot", "[warehouse]\nurl = \"file:///boot/wh\"\n", "warehouse.url", "is in /boot"},
		{"URI of the log catalog", "[catalog]\ntype = \"log\"\nuri = \"http://cat:8181\"\n", "catalog.uri", "only a rest or sql catalog"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es := problems(t, tc.src)
			if len(es) != 1 {
				t.Fatalf("problems = %v; want one", es)
			}
			if e := es[0]; e.Key != tc.key || !strings.Contains(e.Error(), tc.want) || strings.Contains(e.Error(), "secret") {
				t.Errorf("problem = %q (key %q); want key %q containing %q", e, e.Key, tc.key, tc.want)
			}
		})
	}
}

// TestBoundsAccepted: the bounds themselves, the connection strings a
// deployment writes, and directories of its own (a top-level volume, /tmp
// for the cache) pass.
func TestBoundsAccepted(t *testing.T) {
	mustParse(t, `
[postgres]
url = "postgres://ms:secret@db.example:5432/meters?sslmode=disable"
schema = "public"
data_dir = "/data"
[warehouse]
url = "file:///var/lib/meterstore/warehouse"
[catalog]
type = "sql"
uri = "host=db.example port=5432 dbname=catalog user=ms sslmode=disable"
[hot]
ddl_lock_timeout = "10m"
[archive]
settlement_lag = "1096d"
max_windows_per_cycle = 1000
chunk_rows = 1000000
reader_grace = "7d"
[cold]
row_group_rows = 67108864
row_group_bytes = "1GiB"
target_file_size = "16GiB"
bloom_bytes = "128MiB"
batch_rows = 1048576
[query]
cache_dir = "/tmp"
memory_limit = "64MiB"
threads = 1024
max_rows = 100000000
timeout = "1d"
delivery_lag = "366d"
[server]
shutdown_timeout = "1h"
read_timeout = "1h"
write_timeout = "1d"
[maintenance]
min_snapshots = 1000000
max_clock_skew = "366d"
remove_orphans_after = "1h"
snapshot_retention = "36525d"
compact_manifests = 100000
compact_small_files = 1
[[table]]
name = "a"
headroom = "366d"
`, "/srv/ms", nil)
	mustParse(t, `
[catalog]
type = "rest"
uri = "https://catalog.example/iceberg"
[query]
memory_limit = "1TiB"
[archive]
settlement_lag = "62d"
archival_step = "31d"
[[table]]
name = "m"
width = "monthly"
headroom = "1096d"
`, "/srv/ms", nil)
}

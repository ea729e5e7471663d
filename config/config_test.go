package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/consensus/postgres"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// mustParse parses src against dir with env, failing the test on an error.
func mustParse(t *testing.T, src, dir string, env map[string]string) *Config {
	t.Helper()
	c, err := Parse([]byte(src), dir, mapEnv(env))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return c
}

// problems parses src and returns the problems it reports.
func problems(t *testing.T, src string) []*Error {
	t.Helper()
	_, err := Parse([]byte(src), "/srv/ms", mapEnv(nil))
	if err == nil {
		t.Fatalf("Parse accepted:\n%s", src)
	}
	var out []*Error
	for _, e := range unjoin(err) {
		var ce *Error
		if !errors.As(e, &ce) {
			t.Fatalf("problem %v is not an *Error", e)
		}
		out = append(out, ce)
	}
	return out
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func TestTemplateIsDefault(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if d := mustParse(t, Template(), wd, nil); !reflect.DeepEqual(Default(), d) {
		t.Errorf("Default() = %+v; want the template parsed in the working directory %+v", Default(), d)
	}

	c := mustParse(t, Template(), "/srv/ms", nil)

	want := &Config{
		Postgres:    Postgres{Schema: "meterstore", DataDir: "/srv/ms/meterstore-data"},
		Warehouse:   Warehouse{URL: "file:///srv/ms/meterstore-data/warehouse", Namespace: "meterstore"},
		Catalog:     Catalog{Type: "log", Log: "postgres", Isolation: postgres.ReadCommitted},
		Hot:         Hot{DDLLockTimeout: 3 * time.Second, AcceptAhead: 7 * day},
		Archive:     Archive{SettlementLag: 45 * day, Step: day, MaxWindowsPerCycle: 31, ReaderGrace: time.Hour, ChunkRows: 4096},
		Cold:        Cold{RowGroupRows: 1 << 20, RowGroupBytes: 64 << 20, TargetFileSize: 256 << 20, ZstdLevel: 3, BloomBytes: 32 << 10, BatchRows: 8192},
		Maintenance: Maintenance{Interval: 15 * time.Minute, SnapshotRetention: 3653 * day, MinSnapshots: 100, RemoveOrphansAfter: 3 * day, MaxClockSkew: day, Compact: true, CompactManifests: 16, CompactSmallFiles: 8},
		Retention:   RetentionPolicy{LegalBasis: "§ 60 Abs. 6 MsbG", Actor: "retention-job"},
		Query:       Query{MemoryLimit: "2GB", Threads: 2, MaxRows: 1_000_000, MaxResultBytes: 1 << 30, Timeout: 5 * time.Minute, CacheDir: "/srv/ms/meterstore-data/cache", CacheBytes: 10 << 30, SystemTablesMaxAge: 10 * time.Second, FooterCacheBytes: 64 << 20},
		Server: Server{Listen: "127.0.0.1:8080", ReadTimeout: 30 * time.Second, WriteTimeout: 5 * time.Minute, ShutdownTimeout: 30 * time.Second, MaxBodyBytes: 256 << 20,
			MaxConcurrentRequests: 16, IdempotencyRetention: 24 * time.Hour, CatalogTokenLifetime: time.Hour},
		tables: []series.Table{
			{Name: "power", TimeModel: series.Interval, Commodity: metering.Electricity, Resolutions: []metering.Resolution{metering.QuarterHour}, Width: series.Daily, Headroom: 7 * day},
			{Name: "gas", TimeModel: series.Interval, Commodity: metering.Gas, Resolutions: []metering.Resolution{metering.Day}, Width: series.Daily, Headroom: 7 * day},
		},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("template:\n got %+v\nwant %+v", c, want)
	}
}

// TestTemplateValuesAreDefaults holds the template and the defaults of
// keys a file leaves out together: a file of the template's tables alone
// parses to the same configuration.
func TestTemplateValuesAreDefaults(t *testing.T) {
	i := strings.Index(Template(), "\n[[table]]\n")
	tablesOnly := mustParse(t, Template()[i:], "/srv/ms", nil)
	if full := mustParse(t, Template(), "/srv/ms", nil); !reflect.DeepEqual(tablesOnly, full) {
		t.Errorf("defaults differ from the template:\n got %+v\nwant %+v", tablesOnly, full)
	}
}

// TestTemplateDocumentsEveryKey checks that every key the reader knows is
// written in the template, as a setting or, for columns, in a comment.
func TestTemplateDocumentsEveryKey(t *testing.T) {
	for parent, names := range known() {
		for name := range names {
			section := "[" + parent + "]"
			if parent == "" {
				section = ""
			} else if parent == "table" || parent == "table.column" {
				section = "[[" + parent + "]]"
			}
			i := strings.Index(Template(), section)
			if i < 0 || !strings.Contains(Template()[i:], name+" =") && !strings.Contains(Template()[i:], "["+name+"]") && !strings.Contains(Template()[i:], "[["+name+"]]") && !strings.Contains(Template()[i:], "[[table."+name+"]]") {
				t.Errorf("the template does not document %s.%s", parent, name)
			}
		}
	}
}

func TestTableConversion(t *testing.T) {
	c := mustParse(t, `
[[table]]
name = "power"
time_model = "interval"
commodity = "STROM"
resolutions = ["PT15M", "PT1H"]
width = "monthly"
headroom = "40d"
exclusion = false
  [[table.column]]
  name = "tariff"
  type = "text"
  identity = true
  values = ["HT", "NT"]
  [[table.column]]
  name = "channel"
  type = "bigint"

[[table]]
name = "registers"
time_model = "point"
integrity = "exclusion"
provenance = true
  [[table.column]]
  name = "source_ref"

[archive]
settlement_lag = "62d"
archival_step = "31d"
`, "/srv/ms", nil)
	want := []series.Table{
		{
			Name: "power", TimeModel: series.Interval, Commodity: metering.Electricity,
			Resolutions: []metering.Resolution{metering.QuarterHour, metering.Hour},
			Columns: []series.Column{
				{Name: "tariff", Type: series.Text, Identity: true, Values: []string{"HT", "NT"}},
				{Name: "channel", Type: series.BigInt, Values: nil},
			},
			Width: series.Monthly, Headroom: 40 * day, Integrity: series.IntegrityWrite,
		},
		{Name: "registers", TimeModel: series.Point, Width: series.Daily, Headroom: 7 * day, Integrity: series.IntegrityExclusion,
			// provenance = true adds the column not declared, after those declared.
			Columns: []series.Column{{Name: series.ColumnSourceRef, Type: series.Text}, {Name: series.ColumnSourceKind, Type: series.Text}}},
	}
	got := c.Tables()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Tables() =\n%+v\nwant\n%+v", got, want)
	}
	got[0].Columns[0].Values[0] = "XX"
	got[0].Resolutions[0] = metering.Day
	if again := c.Tables(); !reflect.DeepEqual(again, want) {
		t.Errorf("changing what Tables returned changed the Config: %+v", again)
	}
}

func TestInlineTables(t *testing.T) {
	c := mustParse(t, `
table = [
  { name = "a", column = [{ name = "x" }, { name = "y", values = ["1"] }] },
  { name = "b" },
]
`, "/srv/ms", nil)
	tables := c.Tables()
	if len(tables) != 2 || tables[0].Name != "a" || tables[1].Name != "b" || len(tables[0].Columns) != 2 || tables[0].Columns[1].Name != "y" {
		t.Fatalf("Tables() = %+v", tables)
	}
	es := problems(t, `
table = [
  { name = "a", column = [{ name = "x" }, { nmae = "y" }] },
  { name = "a" },
]
`)
	want := map[string]int{"table[0].column[1].nmae": 3, "table[0].column[1].name": 3, "table[1].name": 4}
	for _, e := range es {
		if line, ok := want[e.Key]; !ok || line != e.Line {
			t.Errorf("problem %v; want one of %v", e, want)
		}
		delete(want, e.Key)
	}
	if len(want) > 0 {
		t.Errorf("missing problems at %v", want)
	}
}

func TestEnv(t *testing.T) {
	c := mustParse(t, `
[postgres]
url = "postgres://${PGUSER}@${PGHOST}/meters"
[archive]
settlement_lag = "${LAG}"
[warehouse]
url = "s3://${BUCKET}?region=eu-central-1"
namespace = "ns"
[retention]
actor = "$${literal}"
`, "/srv/ms", map[string]string{"PGUSER": "ms", "PGHOST": "db:5432", "LAG": "60d", "BUCKET": "meters"})
	if c.Postgres.URL != "postgres://ms@db:5432/meters" || c.Archive.SettlementLag != 60*day || c.Warehouse.URL != "s3://meters?region=eu-central-1" || c.Retention.Actor != "${literal}" {
		t.Errorf("expanded to %+v, %+v, %+v, %+v", c.Postgres, c.Archive, c.Warehouse, c.Retention)
	}

	es := problems(t, `
[postgres]
url = "${METERSTORE_PG_URL}"
`)
	if len(es) != 1 || es[0].Key != "postgres.url" || es[0].Line != 3 || !strings.Contains(es[0].Error(), "METERSTORE_PG_URL") {
		t.Errorf("problems = %v; want postgres.url at line 3 naming METERSTORE_PG_URL", es)
	}
}

func TestPaths(t *testing.T) {
	c := mustParse(t, `
[postgres]
data_dir = "../data"
[warehouse]
url = "file://wh/tables"
`, "/srv/ms/etc", nil)
	if c.Postgres.DataDir != "/srv/ms/data" || c.Warehouse.URL != "file:///srv/ms/etc/wh/tables" || c.Query.CacheDir != "/srv/ms/data/cache" {
		t.Errorf("paths resolved to %q, %q, %q", c.Postgres.DataDir, c.Warehouse.URL, c.Query.CacheDir)
	}
	c = mustParse(t, `
[warehouse]
url = "file:///var/lib/wh"
[query]
cache_dir = "/var/cache/ms"
`, "/srv/ms", nil)
	if c.Warehouse.URL != "file:///var/lib/wh" || c.Query.CacheDir != "/var/cache/ms" {
		t.Errorf("absolute paths changed to %q, %q", c.Warehouse.URL, c.Query.CacheDir)
	}
	for _, u := range []string{"s3://bucket?endpoint=http://127.0.0.1:7070&use_path_style=true", "gs://b", "azblob://c", "mem://"} {
		if c := mustParse(t, "[warehouse]\nurl = \""+u+"\"\n", "/srv/ms", nil); c.Warehouse.URL != u {
			t.Errorf("warehouse %q became %q", u, c.Warehouse.URL)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "meterstore.toml")
	if err := os.WriteFile(path, []byte(Template()), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "file://" + filepath.ToSlash(filepath.Join(dir, "meterstore-data", "warehouse")); c.Warehouse.URL != want {
		t.Errorf("warehouse %q; want %q, beside the file", c.Warehouse.URL, want)
	}

	t.Setenv("MS_CONFIG_TEST_LAG", "2d")
	if err := os.WriteFile(path, []byte("[archive]\nsettlement_lag = \"${MS_CONFIG_TEST_LAG}\"\nchunk_rows = -1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(path)
	if want := path + ":3: archive.chunk_rows: -1: want 1 to 1000000"; err == nil || err.Error() != want {
		t.Errorf("Load error = %v; want %q", err, want)
	}
	if _, err := Load(filepath.Join(dir, "missing.toml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file: %v", err)
	}
}

func TestConversions(t *testing.T) {
	c := mustParse(t, `
[hot]
ddl_lock_timeout = "0s"
[catalog]
log = "object_store"
[retention]
policy = "calendar_years:3"
[query]
memory_limit = 536870912
threads = 0
max_result_bytes = "64MiB"
timeout = "0s"
`, "/srv/ms", nil)
	if got := c.Hot.DDLLockTimeout; got != 0 {
		t.Errorf("ddl_lock_timeout 0s: DDLLockTimeout = %v; want 0, no bound", got)
	}
	if c.Catalog.Log != "object_store" {
		t.Errorf("catalog.log = %q", c.Catalog.Log)
	}
	if want := (RetentionPolicy{Kind: "calendar_years", Years: 3, LegalBasis: "§ 60 Abs. 6 MsbG", Actor: "retention-job"}); c.Retention != want {
		t.Errorf("retention = %+v; want %+v", c.Retention, want)
	}
	if c.Query.MemoryLimit != "512MiB" || c.Query.Threads != 0 || c.Query.MaxResultBytes != 64<<20 || c.Query.Timeout != 0 {
		t.Errorf("query = %+v", c.Query)
	}
	c = mustParse(t, `
[retention]
policy = "rolling:1095d"
legal_basis = "Art. 17 DSGVO"
actor = "ops"
[query]
memory_limit = ""
`, "/srv/ms", nil)
	if want := (RetentionPolicy{Kind: "rolling", Rolling: 1095 * day, LegalBasis: "Art. 17 DSGVO", Actor: "ops"}); c.Retention != want {
		t.Errorf("retention = %+v; want %+v", c.Retention, want)
	}
	if c.Query.MemoryLimit != "" {
		t.Errorf("memory_limit \"\" became %q", c.Query.MemoryLimit)
	}
}

// TestProvenanceDeclared: a provenance column declared against the rule is
// refused naming its section.
func TestProvenanceDeclared(t *testing.T) {
	es := problems(t, `
[[table]]
name = "a"
provenance = true
  [[table.column]]
  name = "source_kind"
  identity = true
`)
	if len(es) != 1 || es[0].Key != "table[0].column[0].name" || !strings.Contains(es[0].Error(), "records provenance") {
		t.Fatalf("problems %v", es)
	}
}

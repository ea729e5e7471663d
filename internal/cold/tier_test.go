package cold

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/series"
)

func TestEnsureCreatesVersion2Table(t *testing.T) {
	e := newEnv(t, Options{RowGroupRows: 50_000, TargetFileSize: 64 << 20, ZstdLevel: 7})
	tab := loadProfile("power")
	h := e.ensure(t, tab)
	if h.Name() != "power" || !reflect.DeepEqual(h.Identifier(), table.Identifier{"meterstore", "power"}) {
		t.Fatalf("handle %q %v", h.Name(), h.Identifier())
	}
	ice, err := e.cat.LoadTable(t.Context(), h.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	meta := ice.Metadata()
	if v := meta.Version(); v != 2 {
		t.Fatalf("format version %d, want 2", v)
	}

	type col struct {
		id       int
		name     string
		typ      string
		required bool
	}
	var got []col
	for _, f := range ice.Schema().Fields() {
		got = append(got, col{f.ID, f.Name, f.Type.String(), f.Required})
	}
	want := []col{
		{1, "malo_id", "string", true}, {2, "melo_id", "string", false}, {3, "obis_code", "string", true},
		{4, "sparte", "string", true}, {5, "from", "timestamptz", true}, {6, "to", "timestamptz", true},
		{7, "value", "decimal(18, 6)", true}, {8, "unit", "string", true}, {9, "quality", "string", true},
		{10, "resolution", "string", true}, {11, "version", "decimal(20, 0)", true},
		{12, "version_scope", "string", true}, {13, "recorded_at", "timestamptz", true},
		{14, "balancing_day", "date", true}, {15, "subject_id", "string", false},
		{16, "channel", "string", true}, {17, "source", "string", false}, {18, "seq", "long", false},
		{19, "superseded", "boolean", false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("schema\n got %v\nwant %v", got, want)
	}
	if ids := ice.Schema().IdentifierFieldIDs; !reflect.DeepEqual(ids, []int{1, 3, 5, 16, 11}) {
		t.Fatalf("identifier fields %v, want merge key and version", ids)
	}

	spec := ice.Spec()
	var parts []string
	for _, f := range spec.Fields() {
		name, _ := ice.Schema().FindColumnName(f.SourceID())
		parts = append(parts, f.Transform.String()+"("+name+")")
	}
	if strings.Join(parts, ",") != "month(from),identity(channel),identity(superseded)" {
		t.Fatalf("partition spec %v", parts)
	}
	order := ice.SortOrder()
	var sorted []string
	for _, f := range order.Fields() {
		name, _ := ice.Schema().FindColumnName(f.SourceIDs[0])
		sorted = append(sorted, name+" "+string(f.Direction))
	}
	if strings.Join(sorted, ",") != "malo_id asc,from asc" {
		t.Fatalf("sort order %v", sorted)
	}

	props := ice.Properties()
	for k, v := range map[string]string{
		"write.parquet.compression-codec":                   "zstd",
		"write.parquet.compression-level":                   "7",
		"write.parquet.bloom-filter-enabled.column.malo_id": "true",
		"write.parquet.row-group-limit":                     "50000",
		"write.target-file-size-bytes":                      "67108864",
		PropMergeKey:                                        "malo_id,obis_code,from,channel",
	} {
		if props[k] != v {
			t.Errorf("property %s = %q, want %q", k, props[k], v)
		}
	}
	if v, ok := props["write.parquet.bloom-filter-enabled.column.obis_code"]; ok {
		t.Errorf("obis_code bloom filter property %q: a column constant in a file buys nothing from one", v)
	}
	for k := range props {
		if strings.HasPrefix(k, "history.expire.") {
			t.Errorf("property %s is set: retention is not the table's", k)
		}
	}
	// Java's writer refuses iceberg-go's spelling of the page version.
	if v, ok := props[table.ParquetPageVersionKey]; ok {
		t.Errorf("property %s = %q is set: Java's Parquet writer refuses it", table.ParquetPageVersionKey, v)
	}

	// Ensuring again changes nothing: no commit.
	hist, err := e.cat.History(t.Context(), h.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	e.ensure(t, tab)
	again, err := e.cat.History(t.Context(), h.Identifier())
	if err != nil || len(again) != len(hist) {
		t.Fatalf("second Ensure committed: %d commits, then %d (%v)", len(hist), len(again), err)
	}

	// A table an older version created carries "2"; Ensure removes it.
	ice, err = e.foreign.LoadTable(t.Context(), h.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	tx := ice.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{table.ParquetPageVersionKey: "2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	e.ensure(t, tab)
	if ice, err = e.tier.Iceberg(t.Context(), h); err != nil {
		t.Fatal(err)
	}
	if v, ok := ice.Properties()[table.ParquetPageVersionKey]; ok {
		t.Errorf("after Ensure, %s = %q: want it removed", table.ParquetPageVersionKey, v)
	}
}

func TestEnsurePointTable(t *testing.T) {
	e := newEnv(t, Options{})
	h := e.ensure(t, registers("meters"))
	ice, err := e.tier.Iceberg(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"to", "resolution"} {
		if _, ok := ice.Schema().FindFieldByName(name); ok {
			t.Errorf("a point table has column %q", name)
		}
	}
	if f, _ := ice.Schema().FindFieldByName("value"); f.ID != 6 {
		t.Errorf("value has field id %d, want 6", f.ID)
	}
	if spec := ice.Spec(); spec.NumFields() != 2 {
		t.Errorf("%d partition fields, want month(from) and superseded", spec.NumFields())
	}
}

func TestEnsureRefusesOtherFormatVersions(t *testing.T) {
	e := newEnv(t, Options{})
	tab := loadProfile("v1")
	if err := e.cat.CreateNamespace(t.Context(), table.Identifier{"meterstore"}, nil); err != nil {
		t.Fatal(err)
	}
	_, err := e.cat.CreateTable(t.Context(), table.Identifier{"meterstore", "v1"}, Schema(tab),
		icecatalog.WithProperties(iceberg.Properties{table.PropertyFormatVersion: "1"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.tier.Ensure(t.Context(), tab); err == nil || !strings.Contains(err.Error(), "format version 1") {
		t.Fatalf("Ensure of a v1 table: %v", err)
	}
}

func TestEnsureValidatesDeclaration(t *testing.T) {
	e := newEnv(t, Options{})
	var he *series.Error
	if _, err := e.tier.Ensure(t.Context(), &series.Table{Name: "Bad"}); !errors.As(err, &he) || he.Kind != series.InvalidConfig {
		t.Fatalf("Ensure of an invalid declaration: %v", err)
	}
}

package cold

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/meterstore/meterstore/series"
)

// TestDriftRules applies the rules of seed 004 to a declared schema (want)
// and a cold one (have).
func TestDriftRules(t *testing.T) {
	str, long := iceberg.PrimitiveTypes.String, iceberg.PrimitiveTypes.Int64
	f := func(id int, name string, typ iceberg.Type, required bool) iceberg.NestedField {
		return iceberg.NestedField{ID: id, Name: name, Type: typ, Required: required}
	}
	base := []iceberg.NestedField{
		f(1, "malo_id", str, true),
		f(2, "value", iceberg.DecimalTypeOf(18, 6), true),
		f(3, "note", str, false),
		f(4, "channel", str, true),
	}
	with := func(fields []iceberg.NestedField, change func([]iceberg.NestedField) []iceberg.NestedField) *iceberg.Schema {
		return iceberg.NewSchema(0, change(slices.Clone(fields))...)
	}
	same := func(fs []iceberg.NestedField) []iceberg.NestedField { return fs }
	for _, tc := range []struct {
		name       string
		want, have *iceberg.Schema
		add        []string // nullable columns to add to the cold table
		undeclared []string // nullable columns it keeps, undeclared
		quarantine string   // a word the reason must contain; "" passes
	}{
		{name: "identical", want: with(base, same), have: with(base, same)},
		{name: "nullable column declared, missing in the cold table", want: with(base, same),
			have: with(base, func(fs []iceberg.NestedField) []iceberg.NestedField { return slices.Delete(fs, 2, 3) }), add: []string{"note"}},
		{name: "nullable column dropped from the declaration", want: with(base, func(fs []iceberg.NestedField) []iceberg.NestedField { return slices.Delete(fs, 2, 3) }),
			have: with(base, same), undeclared: []string{"note"}},
		{name: "nullable column renamed", want: with(base, func(fs []iceberg.NestedField) []iceberg.NestedField { fs[2].Name = "remark"; return fs }),
			have: with(base, same), add: []string{"remark"}, undeclared: []string{"note"}},
		{name: "decimal precision widened", want: with(base, same),
			have: with(base, func(fs []iceberg.NestedField) []iceberg.NestedField {
				fs[1].Type = iceberg.DecimalTypeOf(22, 6)
				return fs
			})},
		{name: "long widened from int", want: with(base, func(fs []iceberg.NestedField) []iceberg.NestedField {
			return append(fs, f(5, "seq", iceberg.PrimitiveTypes.Int32, false))
		}), have: with(base, func(fs []iceberg.NestedField) []iceberg.NestedField { return append(fs, f(5, "seq", long, false)) })},
		{name: "foreign nullable column", want: with(base, same),
			have:       with(base, func(fs []iceberg.NestedField) []iceberg.NestedField { return append(fs, f(9, "spark_tag", str, false)) }),
			undeclared: []string{"spark_tag"}},
		{name: "nullable column made required (attribute declared identity)", quarantine: "making a column required",
			want: with(base, func(fs []iceberg.NestedField) []iceberg.NestedField { fs[2].Required = true; return fs }), have: with(base, same)},
		{name: "NOT NULL column added (identity declared)", quarantine: "NOT NULL",
			want: with(base, func(fs []iceberg.NestedField) []iceberg.NestedField { return append(fs, f(5, "tariff", str, true)) }), have: with(base, same)},
		{name: "required column dropped (identity undeclared)", quarantine: "dropping a required column",
			want: with(base, func(fs []iceberg.NestedField) []iceberg.NestedField { return slices.Delete(fs, 3, 4) }), have: with(base, same)},
		{name: "identity column renamed", quarantine: "NOT NULL",
			want: with(base, func(fs []iceberg.NestedField) []iceberg.NestedField { fs[3].Name = "kanal"; return fs }), have: with(base, same)},
		{name: "decimal scale changed", quarantine: "scale",
			want: with(base, same), have: with(base, func(fs []iceberg.NestedField) []iceberg.NestedField {
				fs[1].Type = iceberg.DecimalTypeOf(19, 7)
				return fs
			})},
		{name: "decimal precision narrowed", quarantine: "narrowed",
			want: with(base, same), have: with(base, func(fs []iceberg.NestedField) []iceberg.NestedField {
				fs[1].Type = iceberg.DecimalTypeOf(12, 6)
				return fs
			})},
		{name: "NOT NULL in the cold table only", quarantine: "nullable in the declaration",
			want: with(base, same), have: with(base, func(fs []iceberg.NestedField) []iceberg.NestedField { fs[2].Required = true; return fs })},
		{name: "type changed", quarantine: "type long",
			want: with(base, same), have: with(base, func(fs []iceberg.NestedField) []iceberg.NestedField { fs[2].Type = long; return fs })},
		{name: "long narrowed to int", quarantine: "type int",
			want: with(base, func(fs []iceberg.NestedField) []iceberg.NestedField { return append(fs, f(5, "seq", long, false)) }),
			have: with(base, func(fs []iceberg.NestedField) []iceberg.NestedField {
				return append(fs, f(5, "seq", iceberg.PrimitiveTypes.Int32, false))
			})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			add, kept, reasons := compareSchemas(tc.want, tc.have)
			names, undeclared := fieldNames(add), fieldNames(kept)
			if len(names) == 0 {
				names = nil
			}
			if len(undeclared) == 0 {
				undeclared = nil
			}
			switch {
			case tc.quarantine == "" && len(reasons) > 0:
				t.Fatalf("quarantined: %v", reasons)
			case tc.quarantine != "" && (len(reasons) == 0 || !strings.Contains(strings.Join(reasons, "; "), tc.quarantine)):
				t.Fatalf("reasons %q, want one saying %q", reasons, tc.quarantine)
			case tc.quarantine == "" && !slices.Equal(names, tc.add):
				t.Fatalf("columns to add %v, want %v", names, tc.add)
			case tc.quarantine == "" && !slices.Equal(undeclared, tc.undeclared):
				t.Fatalf("columns kept undeclared %v, want %v", undeclared, tc.undeclared)
			}
		})
	}
}

// TestDriftQuarantinesArchival changes a cold table out of band, as an
// operator with another tool would, and checks what the Tier then does.
func TestDriftQuarantinesArchival(t *testing.T) {
	e := newEnv(t, Options{})
	tab := loadProfile("power")
	h := e.ensure(t, tab)
	jan := quarterHours(0, jan2026, 4)
	e.archive(t, h, jan2026, feb2026, jan)

	// An operator drops the nullable column "source": the Tier adds it back
	// before it writes, with its former field, so the values archived
	// before read again, and nothing is lost.
	ice, err := e.foreign.LoadTable(t.Context(), h.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	old, _ := ice.Schema().FindFieldByName("source")
	tx := ice.NewTransaction()
	if err := tx.UpdateSchema(true, false).DeleteColumn([]string{"source"}).Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := e.tier.CheckDrift(t.Context(), tab); err != nil {
		t.Fatalf("a dropped nullable column quarantined: %v", err)
	}
	feb := quarterHours(0, feb2026, 10)
	e.archive(t, h, feb2026, mar2026, feb)
	ice, err = e.tier.Iceberg(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := ice.Schema().FindFieldByName("source"); !ok || f.ID != old.ID || f.Required {
		t.Fatalf("column source after archival: %+v, %v (was id %d)", f, ok, old.ID)
	}
	got := collect(t, e.tier.Scan(t.Context(), h, series.Range{}))
	sameReadings(t, tab, got, append(slices.Clone(jan), feb...))

	// An operator adds a NOT NULL column: archival stops and says why.
	ice, err = e.foreign.LoadTable(t.Context(), h.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	tx = ice.NewTransaction()
	if err := tx.UpdateSchema(true, true).AddColumn([]string{"tariff"}, iceberg.PrimitiveTypes.String, "", true, nil).Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	var q *QuarantineError
	if err := e.tier.CheckDrift(t.Context(), tab); !errors.As(err, &q) || !strings.Contains(err.Error(), `"tariff"`) {
		t.Fatalf("drift check after a NOT NULL column: %v", err)
	}
	before := e.files(t, ".parquet")
	if _, err := e.tier.Archive(t.Context(), h, mar2026.AddDate(0, 1, 0), mar2026, mar2026.AddDate(0, 1, 0), Readings(quarterHours(0, mar2026, 4))); !errors.As(err, &q) {
		t.Fatalf("archival of a quarantined table: %v", err)
	}
	if _, err := e.tier.AppendLate(t.Context(), h, quarterHours(1, jan2026, 1)); !errors.As(err, &q) {
		t.Fatalf("late rows into a quarantined table: %v", err)
	}
	if after := e.files(t, ".parquet"); !slices.Equal(before, after) {
		t.Fatalf("a quarantined table got files: %v", after)
	}
	if w, _, _ := e.tier.Watermark(t.Context(), h); !w.Equal(mar2026) {
		t.Fatalf("the watermark of a quarantined table moved to %v", w)
	}
	// Ensure hands back the handle with the reason; scans still work.
	h2, err := e.tier.Ensure(t.Context(), tab)
	if !errors.As(err, &q) || h2 == nil {
		t.Fatalf("Ensure of a quarantined table: %v, %v", h2, err)
	}
	if n := len(collect(t, e.tier.Scan(t.Context(), h2, series.Range{}))); n != 14 {
		t.Fatalf("scan of a quarantined table: %d readings, want 14", n)
	}
}

func TestDriftUnreadableSchemaQuarantines(t *testing.T) {
	e := newEnv(t, Options{})
	tab := loadProfile("power")
	h := e.ensure(t, tab)
	ice, err := e.tier.Iceberg(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimPrefix(ice.MetadataLocation(), e.wh.Root+"/")
	if err := e.wh.Bucket.Delete(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	var q *QuarantineError
	err = e.tier.CheckDrift(t.Context(), tab)
	if !errors.As(err, &q) || q.Err == nil || !strings.Contains(err.Error(), "cannot be read") {
		t.Fatalf("drift check of an unreadable table: %v", err)
	}
}

func fieldNames(fs []iceberg.NestedField) []string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name
	}
	return names
}

package catalogtest

import (
	"errors"
	"slices"
	"testing"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// Features says what a catalog under Run offers beyond what every one
// does.
type Features struct {
	// Rename says that RenameTable moves a table. Without it, a rename
	// must fail and leave the table where it was.
	Rename bool
}

// Run is the conformance suite of the catalogs MeterStore commits
// through: namespaces, tables created, loaded, listed, committed to and
// dropped, and a commit on a stale base, which must fail with
// table.ErrCommitFailed and leave no trace. open returns a catalog
// without the namespace conform, for each subtest anew.
func Run(t *testing.T, open func(t *testing.T) icecatalog.Catalog, f Features) {
	ns := table.Identifier{"conform"}
	power := table.Identifier{"conform", "power"}
	// setup opens a catalog with the namespace and, if withTable, the
	// table power.
	setup := func(t *testing.T, withTable bool) (icecatalog.Catalog, *table.Table) {
		t.Helper()
		c := open(t)
		if err := c.CreateNamespace(t.Context(), ns, iceberg.Properties{"owner": "suite"}); err != nil {
			t.Fatal(err)
		}
		if !withTable {
			return c, nil
		}
		spec := iceberg.NewPartitionSpec(iceberg.PartitionField{
			SourceIDs: []int{2}, FieldID: 1000, Name: "from_month", Transform: iceberg.MonthTransform{},
		})
		tbl, err := c.CreateTable(t.Context(), power, Schema, icecatalog.WithPartitionSpec(&spec))
		if err != nil {
			t.Fatal(err)
		}
		return c, tbl
	}

	t.Run("namespaces", func(t *testing.T) {
		ctx := t.Context()
		c, _ := setup(t, false)
		if ok, err := c.CheckNamespaceExists(ctx, ns); err != nil || !ok {
			t.Fatalf("namespace exists: %v, %v", ok, err)
		}
		if ok, err := c.CheckNamespaceExists(ctx, table.Identifier{"nope"}); err != nil || ok {
			t.Fatalf("a missing namespace exists: %v, %v", ok, err)
		}
		all, err := c.ListNamespaces(ctx, nil)
		if err != nil || !slices.ContainsFunc(all, func(id table.Identifier) bool { return slices.Equal(id, ns) }) {
			t.Fatalf("namespaces %v, %v: want %v among them", all, err, ns)
		}
		if err := c.CreateNamespace(ctx, ns, nil); !errors.Is(err, icecatalog.ErrNamespaceAlreadyExists) {
			t.Fatalf("creating it again: %v, want ErrNamespaceAlreadyExists", err)
		}
		if _, err := c.UpdateNamespaceProperties(ctx, ns, nil, iceberg.Properties{"k": "v"}); err != nil {
			t.Fatal(err)
		}
		props, err := c.LoadNamespaceProperties(ctx, ns)
		if err != nil || props["owner"] != "suite" || props["k"] != "v" {
			t.Fatalf("properties %v, %v: want owner=suite and k=v", props, err)
		}
		if err := c.DropNamespace(ctx, ns); err != nil {
			t.Fatal(err)
		}
		if ok, err := c.CheckNamespaceExists(ctx, ns); err != nil || ok {
			t.Fatalf("a dropped namespace exists: %v, %v", ok, err)
		}
	})

	t.Run("tables", func(t *testing.T) {
		ctx := t.Context()
		c, _ := setup(t, true)
		got, err := c.LoadTable(ctx, power)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Schema().Equals(Schema) {
			t.Errorf("loaded schema %v, want %v", got.Schema(), Schema)
		}
		if ok, err := c.CheckTableExists(ctx, power); err != nil || !ok {
			t.Fatalf("table exists: %v, %v", ok, err)
		}
		if names := tableNames(t, c, ns); !slices.Equal(names, []string{"power"}) {
			t.Fatalf("tables %v, want [power]", names)
		}
		if _, err := c.CreateTable(ctx, power, Schema); !errors.Is(err, icecatalog.ErrTableAlreadyExists) {
			t.Fatalf("creating it again: %v, want ErrTableAlreadyExists", err)
		}
		gas := table.Identifier{"conform", "gas"}
		if _, err := c.LoadTable(ctx, gas); !errors.Is(err, icecatalog.ErrNoSuchTable) {
			t.Fatalf("loading a missing table: %v, want ErrNoSuchTable", err)
		}
		if ok, err := c.CheckTableExists(ctx, gas); err != nil || ok {
			t.Fatalf("a missing table exists: %v, %v", ok, err)
		}
		if err := c.DropNamespace(ctx, ns); !errors.Is(err, icecatalog.ErrNamespaceNotEmpty) {
			t.Fatalf("dropping a namespace with a table: %v, want ErrNamespaceNotEmpty", err)
		}
	})

	t.Run("commit", func(t *testing.T) {
		c, tbl := setup(t, true)
		next, err := AppendRows(t, tbl, "a", 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.LoadTable(t.Context(), power)
		if err != nil {
			t.Fatal(err)
		}
		if got.MetadataLocation() != next.MetadataLocation() || got.MetadataLocation() == tbl.MetadataLocation() {
			t.Fatalf("loaded %s after the commit to %s from %s", got.MetadataLocation(), next.MetadataLocation(), tbl.MetadataLocation())
		}
		if w := Writers(t, got); len(w) != 10 {
			t.Fatalf("table holds %v, want 10 rows", w)
		}
	})

	t.Run("conflict", func(t *testing.T) {
		ctx := t.Context()
		c, tbl := setup(t, true)
		base, err := AppendRows(t, tbl, "base", 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		won, err := AppendRows(t, base, "won", 5, nil)
		if err != nil {
			t.Fatal(err)
		}
		// A commit made on base, which no longer is the table's head.
		stale := base.CurrentSnapshot().SnapshotID
		_, _, err = c.CommitTable(ctx, power, []table.Requirement{table.AssertRefSnapshotID("main", &stale)},
			[]table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"stale": "yes"})})
		if !errors.Is(err, table.ErrCommitFailed) {
			t.Fatalf("a commit on a stale base: %v, want table.ErrCommitFailed", err)
		}
		got, err := c.LoadTable(ctx, power)
		if err != nil {
			t.Fatal(err)
		}
		if got.MetadataLocation() != won.MetadataLocation() {
			t.Fatalf("after the failed commit the table is at %s, want %s", got.MetadataLocation(), won.MetadataLocation())
		}
		if _, ok := got.Properties()["stale"]; ok {
			t.Fatalf("the failed commit's property is there: %v", got.Properties())
		}
		if w := Writers(t, got); len(w) != 15 {
			t.Fatalf("table holds %d rows, want 15", len(w))
		}
	})

	t.Run("drop", func(t *testing.T) {
		ctx := t.Context()
		c, _ := setup(t, true)
		if err := c.DropTable(ctx, power); err != nil {
			t.Fatal(err)
		}
		if ok, err := c.CheckTableExists(ctx, power); err != nil || ok {
			t.Fatalf("a dropped table exists: %v, %v", ok, err)
		}
		if _, err := c.LoadTable(ctx, power); !errors.Is(err, icecatalog.ErrNoSuchTable) {
			t.Fatalf("loading a dropped table: %v, want ErrNoSuchTable", err)
		}
		if names := tableNames(t, c, ns); len(names) != 0 {
			t.Fatalf("tables after the drop: %v", names)
		}
		if err := c.DropTable(ctx, power); !errors.Is(err, icecatalog.ErrNoSuchTable) {
			t.Fatalf("dropping it again: %v, want ErrNoSuchTable", err)
		}
		if err := c.DropNamespace(ctx, ns); err != nil {
			t.Fatalf("dropping the emptied namespace: %v", err)
		}
	})

	t.Run("rename", func(t *testing.T) {
		ctx := t.Context()
		c, _ := setup(t, true)
		moved := table.Identifier{"conform", "moved"}
		_, err := c.RenameTable(ctx, power, moved)
		want, gone := moved, power
		if !f.Rename {
			if err == nil {
				t.Fatal("a catalog without rename renamed")
			}
			want, gone = power, moved
		} else if err != nil {
			t.Fatal(err)
		}
		if _, err := c.LoadTable(ctx, want); err != nil {
			t.Fatalf("after the rename: %v", err)
		}
		if ok, err := c.CheckTableExists(ctx, gone); err != nil || ok {
			t.Fatalf("after the rename, %v exists: %v, %v", gone, ok, err)
		}
	})
}

// tableNames lists the names of the tables of namespace ns, sorted.
func tableNames(t *testing.T, c icecatalog.Catalog, ns table.Identifier) []string {
	t.Helper()
	var out []string
	for id, err := range c.ListTables(t.Context(), ns) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, id[len(id)-1])
	}
	slices.Sort(out)
	return out
}

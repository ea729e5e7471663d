package catalog_test

import (
	"net/url"
	"os"
	"testing"

	"github.com/apache/iceberg-go/table"
)

// TestLoadTwice: loading a table again gives the same metadata, the
// current one after a commit, and fails once its metadata file is damaged
// or gone, as a load without the parsed-metadata cache would.
func TestLoadTwice(t *testing.T) {
	wh := fileWarehouse(t)
	c := newCatalog(t, wh, blobLog(t, wh.Bucket))
	ident := table.Identifier{"metering", "power"}
	tbl := createTable(t, c, "power", nil)
	a, err := c.LoadTable(t.Context(), ident)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.LoadTable(t.Context(), ident)
	if err != nil {
		t.Fatal(err)
	}
	if a.MetadataLocation() != b.MetadataLocation() || !a.Metadata().Equals(b.Metadata()) {
		t.Fatalf("two loads differ: %s, %s", a.MetadataLocation(), b.MetadataLocation())
	}
	if _, err := appendRows(t, tbl, "w", 10, nil); err != nil {
		t.Fatal(err)
	}
	after, err := c.LoadTable(t.Context(), ident)
	if err != nil {
		t.Fatal(err)
	}
	if after.MetadataLocation() == a.MetadataLocation() || after.CurrentSnapshot() == nil {
		t.Fatalf("the load after a commit is at %s with snapshot %v", after.MetadataLocation(), after.CurrentSnapshot())
	}
	u, err := url.Parse(after.MetadataLocation())
	if err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(u.Path)
	if err != nil {
		t.Fatal(err)
	}
	// Damaged in place: read again, and refused.
	if err := os.WriteFile(u.Path, good[:len(good)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.LoadTable(t.Context(), ident); err == nil {
		t.Fatal("a table whose metadata file is damaged loaded")
	}
	if err := os.Rename(u.Path, u.Path+".gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.LoadTable(t.Context(), ident); err == nil {
		t.Fatal("a table whose metadata file is gone loaded")
	}
}

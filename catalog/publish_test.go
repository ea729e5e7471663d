package catalog_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/meterstore/meterstore/blob"
	"github.com/meterstore/meterstore/catalog"
)

// TestVersionHint checks what a reader without a catalog relies on: the
// hint names the newest version, without a trailing newline, and
// v<N>.metadata.json holds the current metadata; a mirror that a crash
// skipped is repaired by the next commit.
func TestVersionHint(t *testing.T) {
	for _, be := range backends()[:2] {
		t.Run(be.name, func(t *testing.T) {
			c := be.open(t)
			b := c.Warehouse().Bucket
			tbl := createTable(t, c, "power", nil)
			var err error
			for i := range 3 {
				if tbl, err = appendRows(t, tbl, fmt.Sprint("w", i), 4, nil); err != nil {
					t.Fatal(err)
				}
			}
			hint, err := b.Get(t.Context(), "metering/power/metadata/version-hint.text")
			if err != nil || string(hint) != "4" {
				t.Fatalf("version hint %q, %v; want \"4\"", hint, err)
			}
			assertMirror(t, c, b, 4, tbl.MetadataLocation())

			// A crash after the commit of version 5 and before its mirror.
			if tbl, err = appendRows(t, tbl, "w3", 4, nil); err != nil {
				t.Fatal(err)
			}
			if err := b.Delete(t.Context(), "metering/power/metadata/v5.metadata.json"); err != nil {
				t.Fatal(err)
			}
			if err := b.Put(t.Context(), "metering/power/metadata/version-hint.text", []byte("4")); err != nil {
				t.Fatal(err)
			}
			v5 := tbl.MetadataLocation()
			if tbl, err = appendRows(t, tbl, "w4", 4, nil); err != nil {
				t.Fatal(err)
			}
			assertMirror(t, c, b, 5, v5)
			assertMirror(t, c, b, 6, tbl.MetadataLocation())
			if hint, _ := b.Get(t.Context(), "metering/power/metadata/version-hint.text"); string(hint) != "6" {
				t.Fatalf("version hint %q after repair, want \"6\"", hint)
			}
		})
	}
}

func assertMirror(t *testing.T, c *catalog.Catalog, b *blob.Bucket, n int, loc string) {
	t.Helper()
	mirror, err := b.Get(t.Context(), fmt.Sprintf("metering/power/metadata/v%d.metadata.json", n))
	if err != nil {
		t.Fatalf("mirror v%d: %v", n, err)
	}
	key := strings.TrimPrefix(loc, c.Warehouse().Root+"/")
	orig, err := b.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if string(mirror) != string(orig) {
		t.Fatalf("v%d.metadata.json differs from the committed %s", n, key)
	}
}

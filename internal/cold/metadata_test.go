package cold

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// TestOldMetadataDeleted: a cold table keeps the metadata files of its
// metadata log (the 100 before the current one) and no more, however many
// commits it has seen; with the property off (a table of a foreign tool)
// they pile up, one per commit.
func TestOldMetadataDeleted(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprint("delete-after-commit=", on), func(t *testing.T) {
			e := newEnv(t, Options{})
			h := e.ensure(t, registers("meters"))
			ice, err := e.tier.Iceberg(t.Context(), h)
			if err != nil {
				t.Fatal(err)
			}
			if !on {
				tx := ice.NewTransaction()
				if err := tx.SetProperties(iceberg.Properties{table.MetadataDeleteAfterCommitEnabledKey: "false"}); err != nil {
					t.Fatal(err)
				}
				if ice, err = tx.Commit(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
			const commits = 120
			for n := range commits {
				tx := ice.NewTransaction()
				if err := tx.SetProperties(iceberg.Properties{"test.n": fmt.Sprint(n)}); err != nil {
					t.Fatal(err)
				}
				if ice, err = tx.Commit(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
			var own int // the catalog's own metadata files, not the mirror's v<N> copies
			for _, f := range e.files(t, ".metadata.json") {
				if !strings.Contains(f, "/metadata/v") {
					own++
				}
			}
			want := 101 // the current file and the 100 its metadata log names
			if !on {
				want = commits + 2
			}
			if on && own != want || !on && own < want {
				t.Fatalf("%d metadata files after %d commits; want %d", own, commits, want)
			}
			// Every file the metadata log names is there.
			logged := 0
			for entry := range ice.Metadata().PreviousFiles() {
				logged++
				if _, err := os.Stat(strings.TrimPrefix(entry.MetadataFile, "file://")); err != nil {
					t.Fatalf("the metadata log names %s: %v", entry.MetadataFile, err)
				}
			}
			if logged != 100 {
				t.Fatalf("metadata log of %d files, want 100", logged)
			}
		})
	}
}

package cold

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/consensus"
	"github.com/meterstore/meterstore/series"
)

// TestLostCommitRemovesItsFiles has two archivers write the same window from
// the same snapshot; the second commits while the first is between writing
// its files and committing them. Without commit retries the first loses the
// compare-and-set; with them, iceberg-go replays it onto the winner and the
// commit check refuses the replay. Either way it must leave no file behind,
// and the table must hold the winner's rows only.
func TestLostCommitRemovesItsFiles(t *testing.T) {
	for _, tc := range []struct {
		retries string
		want    error
	}{
		{"0", table.ErrCommitFailed},
		{"3", ErrWindowArchived},
	} {
		t.Run("retries="+tc.retries, func(t *testing.T) {
			e := newEnv(t, Options{BatchRows: 50})
			tab := loadProfile("power")
			h := e.ensure(t, tab)
			base := quarterHours(0, jan2026, 96)
			e.archive(t, h, jan2026, feb2026, base)
			ice, err := e.tier.Iceberg(t.Context(), h)
			if err != nil {
				t.Fatal(err)
			}
			tx := ice.NewTransaction()
			if err := tx.SetProperties(iceberg.Properties{table.CommitNumRetriesKey: tc.retries, table.CommitMinRetryWaitMsKey: "1"}); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Commit(t.Context()); err != nil {
				t.Fatal(err)
			}

			winner := quarterHours(1, feb2026, 300)
			loser := quarterHours(2, feb2026, 300)
			var written []string
			e.tier.beforeCommit = func(ctx context.Context, _ string) {
				e.tier.beforeCommit = nil
				written = e.files(t, ".parquet")
				if _, err := e.tier.Archive(ctx, h, mar2026, feb2026, mar2026, Readings(winner)); err != nil {
					t.Error(err)
				}
			}
			_, err = e.tier.Archive(t.Context(), h, mar2026, feb2026, mar2026, Readings(loser))
			if !errors.Is(err, tc.want) {
				t.Fatalf("the loser's commit: %v, want %v", err, tc.want)
			}
			if len(written) < 2 {
				t.Fatalf("fixture: the loser had written %v before committing", written)
			}

			sameReadings(t, tab, collect(t, e.tier.Scan(t.Context(), h, series.Range{})), append(base, winner...))
			unreferenced := e.unreferenced(t, h)
			if len(unreferenced) > 0 {
				t.Fatalf("files no snapshot references: %v", unreferenced)
			}
		})
	}
}

// unreferenced returns the data files, manifests, manifest lists and
// digest indexes in the warehouse that no snapshot of h references.
func (e *env) unreferenced(t *testing.T, h *Table) []string {
	t.Helper()
	ice, err := e.tier.Iceberg(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := ice.FS(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	refs, err := referencedFiles(t.Context(), ice, fs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range refs {
		refs[i] = strings.TrimPrefix(r, "file://"+e.dir+"/")
	}
	var out []string
	for _, f := range append(e.files(t, ".parquet"), append(e.files(t, ".avro"), e.files(t, ".json")...)...) {
		if strings.HasSuffix(f, ".json") && !strings.Contains(f, "/digests-") {
			continue // metadata files
		}
		if !slices.Contains(refs, f) {
			out = append(out, f)
		}
	}
	return out
}

// failingCommits is a catalog whose commits report a failure that says
// nothing definite, as a connection lost while the answer was on its way
// does: the log's consensus.ErrIndeterminate, what the catalog returns
// when it cannot settle a compare-and-set. With land set the commit
// reaches the catalog first and lands; without it the commit never
// reaches the catalog.
type failingCommits struct {
	*catalog.Catalog
	land bool
}

func (f *failingCommits) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	if f.land {
		if _, _, err := f.Catalog.CommitTable(ctx, ident, reqs, updates); err != nil {
			return nil, "", err
		}
	}
	return nil, "", fmt.Errorf("connection reset by peer: %w", consensus.ErrIndeterminate)
}

// retryable reports whether err says that trying again may succeed, as
// store.IsRetryable reads it of an error that carries its own verdict.
func retryable(err error) bool {
	var r interface{ IsRetryable() bool }
	return errors.As(err, &r) && r.IsRetryable()
}

// TestCommitThatLandedDespiteAnErrorCounts archives through a catalog whose
// commits report a failure whatever they did. A commit that landed is found
// by re-reading the table: the archival counts, every data file its
// snapshot adds is still there and the rows read back. A commit whose
// outcome is unknown fails, retryably, and keeps every file it wrote, since
// it may still land and a snapshot naming a deleted file loses its rows.
func TestCommitThatLandedDespiteAnErrorCounts(t *testing.T) {
	tab := loadProfile("power")
	t.Run("landed", func(t *testing.T) {
		e := newEnv(t, Options{BatchRows: 4})
		h, tier := e.failingTier(t, tab, true)
		rows := quarterHours(0, jan2026, 10)
		c, err := tier.Archive(t.Context(), h, feb2026, jan2026, feb2026, Readings(rows))
		if err != nil {
			t.Fatalf("archive whose commit landed but reported a failure: %v", err)
		}
		if c.Rows != int64(len(rows)) || c.Files == 0 {
			t.Fatalf("commit %+v, want %d rows in at least one file", c, len(rows))
		}
		ice, err := e.tier.Iceberg(t.Context(), h)
		if err != nil {
			t.Fatal(err)
		}
		if ice.CurrentSnapshot() == nil || ice.CurrentSnapshot().SnapshotID != c.SnapshotID {
			t.Fatalf("current snapshot %v, want the landed one %d", ice.CurrentSnapshot(), c.SnapshotID)
		}
		// The table had no files before: the current snapshot's are the
		// commit's.
		added := slices.Compact(slices.Sorted(slices.Values(dataFilesOf(t, ice, 0))))
		if len(added) != c.Files {
			t.Fatalf("the snapshot adds %d data files, the commit wrote %d", len(added), c.Files)
		}
		for _, f := range added {
			if _, err := os.Stat(strings.TrimPrefix(f, "file://")); err != nil {
				t.Errorf("data file of the landed commit: %v", err)
			}
		}
		sameReadings(t, tab, collect(t, e.tier.Scan(t.Context(), h, series.Range{})), rows)
	})

	t.Run("unknown", func(t *testing.T) {
		e := newEnv(t, Options{BatchRows: 4})
		h, tier := e.failingTier(t, tab, false)
		before := e.files(t, ".parquet")
		var written []string
		tier.beforeCommit = func(context.Context, string) {
			for _, f := range e.files(t, ".parquet") {
				if !slices.Contains(before, f) {
					written = append(written, f)
				}
			}
		}
		_, err := tier.Archive(t.Context(), h, mar2026, feb2026, mar2026, Readings(quarterHours(1, feb2026, 10)))
		if err == nil || !strings.Contains(err.Error(), "may still") || !retryable(err) {
			t.Fatalf("archive whose commit outcome is unknown: %v (retryable %v), want a retryable error saying it may still land", err, retryable(err))
		}
		if len(written) == 0 {
			t.Fatal("fixture: the archival wrote no data file before its commit")
		}
		after := e.files(t, ".parquet")
		for _, f := range written {
			if !slices.Contains(after, f) {
				t.Errorf("data file %s of a commit that may still land was deleted", f)
			}
		}
	})

	if definite(fmt.Errorf("x: %w", errors.New("connection reset"))) || !definite(fmt.Errorf("x: %w", table.ErrCommitFailed)) {
		t.Fatal("definite misclassifies")
	}
}

// failingTier declares tab and returns a Tier on e's warehouse whose
// commits go through failingCommits, and tab's handle in it.
func (e *env) failingTier(t *testing.T, tab *series.Table, land bool) (*Table, *Tier) {
	t.Helper()
	e.ensure(t, tab)
	tier, err := New(&failingCommits{Catalog: e.cat, land: land}, Options{BatchRows: 4})
	if err != nil {
		t.Fatal(err)
	}
	h, err := tier.Ensure(t.Context(), tab)
	if err != nil {
		t.Fatal(err)
	}
	return h, tier
}

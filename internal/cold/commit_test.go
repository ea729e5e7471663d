package cold

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
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

func TestCommitThatLandedDespiteAnErrorCounts(t *testing.T) {
	// A commit whose outcome the catalog reports as failed after it landed
	// is settled by re-reading the table: the snapshot with our commit id
	// is there, so the files stay and the commit is returned.
	e := newEnv(t, Options{})
	h := e.ensure(t, loadProfile("power"))
	ice, err := e.tier.Iceberg(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	rows := quarterHours(0, jan2026, 10)
	enc, err := newEncoder(&h.decl, e.tier.cal, "archive", ice.Schema(), 4)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingFS{}
	// Land a snapshot carrying the id, as if the commit had gone through,
	// then ask settle about a failure that says nothing definite.
	c, err := e.tier.commit(t.Context(), h, ice, write{op: "archive", enc: enc, rows: Readings(rows),
		summary: iceberg.Properties{SummaryWatermark: FormatTime(feb2026)}})
	if err != nil {
		t.Fatal(err)
	}
	landed, err := e.tier.Iceberg(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	id := landed.CurrentSnapshot().Summary.Properties[SummaryCommitID]
	meta, err := e.tier.settle(t.Context(), h, "archive", rec, id, errors.New("connection reset"))
	if err != nil || findCommit(meta, id).SnapshotID != c.SnapshotID {
		t.Fatalf("settle of a landed commit: %v", err)
	}
	// An indefinite failure of a commit that did not land keeps the files.
	_, err = e.tier.settle(t.Context(), h, "archive", rec, "not-ours", errors.New("connection reset"))
	if err == nil || !strings.Contains(err.Error(), "may still") {
		t.Fatalf("settle of an unknown outcome: %v", err)
	}
	if definite(fmt.Errorf("x: %w", errors.New("connection reset"))) || !definite(fmt.Errorf("x: %w", table.ErrCommitFailed)) {
		t.Fatal("definite misclassifies")
	}
}

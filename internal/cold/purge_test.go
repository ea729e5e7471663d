package cold

import (
	"errors"
	"slices"
	"strings"
	"testing"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/series"
)

var errCutShort = errors.New("purge cut short")

// TestPurgeCutShortAtEveryStep cuts a purge short before each file it
// deletes and before the drop, then runs it again: the rerun finishes,
// leaving no file under the table's location and no catalog entry, and
// the other table is untouched. The steps are counted by the hook; the
// loop ends when a purge runs past all of them.
func TestPurgeCutShortAtEveryStep(t *testing.T) {
	steps := 0
	for cut := 0; cut < 200; cut++ {
		e := newEnv(t, Options{})
		h := e.ensure(t, loadProfile("power"))
		other := e.ensure(t, loadProfile("other"))
		e.archive(t, h, jan2026, feb2026, quarterHours(0, jan2026, 8))
		e.archive(t, h, feb2026, mar2026, quarterHours(1, feb2026, 8))
		e.archive(t, other, jan2026, feb2026, quarterHours(2, jan2026, 8))
		// What a failed write leaves is purged too.
		copyTestFile(t, e.dir+"/"+e.files(t, ".parquet")[0], e.dir+"/meterstore/power/data/failed.parquet")
		otherFiles := filesUnder(e.files(t, ""), "meterstore/other/")

		calls := 0
		e.tier.purgeStep = func(string) error {
			calls++
			if calls > cut {
				return errCutShort
			}
			return nil
		}
		_, err := e.tier.Purge(t.Context(), "power", "power")
		e.tier.purgeStep = nil
		if err == nil {
			steps = cut
			break
		}
		if !errors.Is(err, errCutShort) {
			t.Fatalf("cut after %d steps: %v", cut, err)
		}
		if _, err := e.tier.Purge(t.Context(), "power", "power"); err != nil {
			t.Fatalf("cut after %d steps, the rerun: %v", cut, err)
		}
		if left := filesUnder(e.files(t, ""), "meterstore/power/"); len(left) > 0 {
			t.Fatalf("cut after %d steps, the rerun left %v", cut, left)
		}
		if _, err := e.cat.LoadTable(t.Context(), h.Identifier()); !errors.Is(err, icecatalog.ErrNoSuchTable) {
			t.Fatalf("cut after %d steps, the table still loads: %v", cut, err)
		}
		if _, err := e.tier.Purge(t.Context(), "power", "power"); !errors.Is(err, icecatalog.ErrNoSuchTable) {
			t.Fatalf("cut after %d steps, a third run: %v", cut, err)
		}
		if got := filesUnder(e.files(t, ""), "meterstore/other/"); !slices.Equal(got, otherFiles) {
			t.Fatalf("cut after %d steps, the other table's files changed", cut)
		}
		if n := len(collect(t, e.tier.Scan(t.Context(), other, series.Range{}))); n != 8 {
			t.Fatalf("cut after %d steps, the other table reads %d readings", cut, n)
		}
	}
	// Two windows: at least two data files, manifests, manifest lists,
	// metadata files and the planted file, then the drop.
	if steps < 10 {
		t.Fatalf("the purge ran past all cuts after %d steps", steps)
	}
	t.Logf("cut at each of %d steps", steps)
}

// filesUnder returns the files of list under prefix.
func filesUnder(list []string, prefix string) []string {
	var out []string
	for _, f := range list {
		if strings.HasPrefix(f, prefix) {
			out = append(out, f)
		}
	}
	return out
}

// TestPurgeOfASharedLocationCutShort: a table whose location is not named
// after it (here the namespace's, shared with another table) is purged by
// what its metadata references, never by listing; cut short before each
// deletion, a rerun still finds and deletes every referenced file (a
// manifest list or manifest deleted earlier is passed over), and the
// other table keeps every file.
func TestPurgeOfASharedLocationCutShort(t *testing.T) {
	steps := 0
	for cut := 0; cut < 200; cut++ {
		e := newEnv(t, Options{})
		h := e.ensure(t, loadProfile("power"))
		other := e.ensure(t, loadProfile("other"))
		e.archive(t, h, jan2026, feb2026, quarterHours(0, jan2026, 8))
		e.archive(t, other, jan2026, feb2026, quarterHours(2, jan2026, 8))
		_, _, err := e.foreign.CommitTable(t.Context(), h.Identifier(), nil, []table.Update{table.NewSetLocationUpdate("file://" + e.dir + "/meterstore")})
		if err != nil {
			t.Fatal(err)
		}
		e.archive(t, h, feb2026, mar2026, quarterHours(1, feb2026, 8))
		refs := referencedBy(t, e, h)
		otherFiles := filesUnder(e.files(t, ""), "meterstore/other/")

		calls := 0
		e.tier.purgeStep = func(string) error {
			if calls++; calls > cut {
				return errCutShort
			}
			return nil
		}
		_, err = e.tier.Purge(t.Context(), "power", "power")
		e.tier.purgeStep = nil
		if err == nil {
			steps = cut
			break
		}
		if !errors.Is(err, errCutShort) {
			t.Fatalf("cut after %d steps: %v", cut, err)
		}
		if _, err := e.tier.Purge(t.Context(), "power", "power"); err != nil {
			t.Fatalf("cut after %d steps, the rerun: %v", cut, err)
		}
		left := e.files(t, "")
		for _, r := range refs {
			if slices.Contains(left, r) {
				t.Fatalf("cut after %d steps, the rerun left %s", cut, r)
			}
		}
		if got := filesUnder(left, "meterstore/other/"); !slices.Equal(got, otherFiles) {
			t.Fatalf("cut after %d steps, the other table's files changed", cut)
		}
		if _, err := e.cat.LoadTable(t.Context(), h.Identifier()); !errors.Is(err, icecatalog.ErrNoSuchTable) {
			t.Fatalf("cut after %d steps, the table still loads: %v", cut, err)
		}
	}
	if steps < 8 {
		t.Fatalf("the purge ran past all cuts after %d steps", steps)
	}
	t.Logf("cut at each of %d steps", steps)
}

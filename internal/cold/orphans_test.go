package cold

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/series"
)

// orphanFixture is a table with history worth keeping and files worth
// removing, all but one aged past the safety line.
type orphanFixture struct {
	e     *env
	h     *Table
	tab   *series.Table
	rows  []series.Reading // the current snapshot's readings
	snaps map[int64]int64  // records per snapshot still in the metadata
	// orphans are the files cleanup must remove, young the one it must
	// keep for its age, relative to the warehouse.
	orphans []string
	young   string
	oldOnly string // a data file only snapshots before the current one reference
	before  time.Time
}

// newOrphanFixture builds a table of four archival snapshots, a foreign
// overwrite that replaces the first window's data file by a copy (so the
// original is referenced by older snapshots only), and an expiry of the
// two oldest snapshots, whose manifest lists are left behind. A foreign
// write that the watermark check refuses leaves its data file, manifest
// and manifest list. It plants what other failed writers leave: the
// metadata file of a commit that lost, a data file and a manifest of a
// failed write, a Hadoop checksum beside an orphan and one beside a live
// file, and a young unreferenced file.
func newOrphanFixture(t *testing.T) *orphanFixture {
	t.Helper()
	e := newEnv(t, Options{})
	f := &orphanFixture{e: e, tab: loadProfile("power")}
	f.h = e.ensure(t, f.tab)
	for m := range 4 {
		from := jan2026.AddDate(0, m, 0)
		rows := quarterHours(m, from, 8)
		f.rows = append(f.rows, rows...)
		e.archive(t, f.h, from, from.AddDate(0, 1, 0), rows)
	}
	ice, err := e.foreign.LoadTable(t.Context(), f.h.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	first := dataFilesOf(t, ice, ice.Metadata().Snapshots()[0].SnapshotID)
	if len(first) != 1 {
		t.Fatalf("fixture: the first window has %d data files", len(first))
	}
	f.oldOnly = strings.TrimPrefix(first[0], "file://"+e.dir+"/")
	dup := first[0][:strings.LastIndexByte(first[0], '/')+1] + "copy-" + path.Base(first[0])
	copyTestFile(t, filepath.Join(e.dir, f.oldOnly), strings.TrimPrefix(dup, "file://"))
	tx := ice.NewTransaction()
	if err := tx.ReplaceDataFiles(t.Context(), first, []string{dup}, iceberg.Properties{"engine": "compactor"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Expiry re-stamps W onto the foreign snapshot, then keeps four.
	x, err := e.tier.ExpireSnapshots(t.Context(), f.h, time.Now().AddDate(11, 0, 0), Retention{KeepLast: 4})
	if err != nil || len(x.Expired) != 2 {
		t.Fatalf("fixture: expiry %+v, %v", x, err)
	}
	ice, err = e.tier.Iceberg(t.Context(), f.h)
	if err != nil {
		t.Fatal(err)
	}
	f.snaps = map[int64]int64{}
	live := map[string]bool{}
	for _, s := range ice.Metadata().Snapshots() {
		f.snaps[s.SnapshotID] = countAt(t, ice, s.SnapshotID)
		live[strings.TrimPrefix(s.ManifestList, "file://"+e.dir+"/")] = true
		if s.Summary != nil {
			live[strings.TrimPrefix(s.Summary.Properties[SummaryDigests], "file://"+e.dir+"/")] = true
		}
	}
	if !slices.Contains(referencedBy(t, e, f.h), f.oldOnly) || slices.Contains(dataFilesOf(t, ice, 0), "file://"+e.dir+"/"+f.oldOnly) {
		t.Fatalf("fixture: %s is not referenced by an old snapshot only", f.oldOnly)
	}
	for _, l := range e.files(t, ".avro") {
		if strings.Contains(l, "/snap-") && !live[l] {
			f.orphans = append(f.orphans, l) // the expired snapshots' manifest lists
		}
	}
	if len(f.orphans) != 2 {
		t.Fatalf("fixture: expiry left %d manifest lists, want 2: %v", len(f.orphans), f.orphans)
	}
	// And the digest indexes only they named.
	for _, l := range e.files(t, ".json") {
		if strings.Contains(l, "/digests-") && !live[l] {
			f.orphans = append(f.orphans, l)
		}
	}
	if len(f.orphans) != 4 {
		t.Fatalf("fixture: expiry left %d manifest lists and digest indexes, want 4: %v", len(f.orphans), f.orphans)
	}

	dir := filepath.Join(e.dir, "meterstore", "power")
	data := filepath.Dir(filepath.Join(e.dir, f.oldOnly))
	meta := filepath.Join(dir, "metadata")
	plant := func(p string, from string) {
		t.Helper()
		copyTestFile(t, from, p)
		rel, _ := filepath.Rel(e.dir, p)
		f.orphans = append(f.orphans, rel)
	}
	cur := strings.TrimPrefix(ice.MetadataLocation(), "file://")
	plant(filepath.Join(meta, fmt.Sprintf("%05d-%s.metadata.json", 99, uuid.NewString())), cur)
	failed := filepath.Join(data, "00000-0-"+uuid.NewString()+".parquet")
	plant(failed, filepath.Join(e.dir, f.oldOnly))
	plant(filepath.Join(filepath.Dir(failed), "."+filepath.Base(failed)+".crc"), cur)
	manifests := e.files(t, "-m1.avro")
	plant(filepath.Join(meta, uuid.NewString()+"-m1.avro"), filepath.Join(e.dir, manifests[0]))
	// A foreign write the watermark check refuses (as Spark's INSERT
	// moving W back is) leaves its data file, manifest and manifest list.
	had := e.files(t, "")
	written := filepath.Join(data, "00000-7-"+uuid.NewString()+".parquet")
	copyTestFile(t, filepath.Join(e.dir, f.oldOnly), written)
	refused, err := e.cat.LoadTable(t.Context(), f.h.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	tx = refused.NewTransaction()
	if err := tx.AddFiles(t.Context(), []string{"file://" + written}, iceberg.Properties{SummaryWatermark: FormatTime(jan2026)}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(t.Context()); !errors.Is(err, ErrWatermarkBackwards) {
		t.Fatalf("fixture: a commit moving W back: %v", err)
	}
	var left []string
	for _, p := range e.files(t, "") {
		if !slices.Contains(had, p) {
			left = append(left, p)
		}
	}
	if len(left) != 3 {
		t.Fatalf("fixture: the refused write left %v, want a data file, a manifest and a manifest list", left)
	}
	f.orphans = append(f.orphans, left...)
	// A checksum beside a live file stays with it.
	copyTestFile(t, cur, filepath.Join(data, "."+filepath.Base(dup)+".crc"))

	f.before = time.Now().Add(-24 * time.Hour)
	old := f.before.Add(-24 * time.Hour)
	for _, p := range e.files(t, "") {
		if err := os.Chtimes(filepath.Join(e.dir, p), old, old); err != nil {
			t.Fatal(err)
		}
	}
	young := filepath.Join(data, "00001-0-"+uuid.NewString()+".parquet")
	copyTestFile(t, filepath.Join(e.dir, f.oldOnly), young)
	f.young, _ = filepath.Rel(e.dir, young)
	slices.Sort(f.orphans)
	return f
}

// check returns what is wrong with the table after a cleanup: a file
// some snapshot references that is gone, a snapshot that reads other
// records than before, current readings that differ, an orphan left or
// the young file deleted.
func (f *orphanFixture) check(t *testing.T) error {
	t.Helper()
	e := f.e
	var errs []error
	have := e.files(t, "")
	ice, err := e.tier.Iceberg(t.Context(), f.h)
	if err != nil {
		return err
	}
	fs, err := ice.FS(t.Context())
	if err != nil {
		return err
	}
	// Every snapshot's files, read from the metadata: a manifest list or
	// manifest gone fails here, before its data files are looked for.
	refs, err := referencedFiles(t.Context(), ice, fs)
	if err != nil {
		errs = append(errs, fmt.Errorf("the metadata's references cannot be read: %w", err))
	}
	for _, r := range refs {
		if rel := strings.TrimPrefix(r, "file://"+e.dir+"/"); !slices.Contains(have, rel) {
			errs = append(errs, fmt.Errorf("referenced %s is gone", rel))
		}
	}
	for id, n := range f.snaps {
		if got, err := tryCountAt(t, ice, id); err != nil || got != n {
			errs = append(errs, fmt.Errorf("snapshot %d reads %d records (%v), want %d", id, got, err, n))
		}
	}
	var got []series.Reading
	for r, err := range e.tier.Scan(t.Context(), f.h, series.Range{}) {
		if err != nil {
			errs = append(errs, fmt.Errorf("scan: %w", err))
			break
		}
		got = append(got, r)
	}
	if len(normalize(f.tab, got)) != len(f.rows) {
		errs = append(errs, fmt.Errorf("the table reads %d readings, want %d", len(got), len(f.rows)))
	}
	for _, o := range f.orphans {
		if slices.Contains(have, o) {
			errs = append(errs, fmt.Errorf("orphan %s is left", o))
		}
	}
	if !slices.Contains(have, f.young) {
		errs = append(errs, fmt.Errorf("the young file %s was deleted", f.young))
	}
	return errors.Join(errs...)
}

// TestOrphans: cleanup removes exactly the planted and expiry-left files
// older than the safety line, keeps the young one and everything any
// snapshot still in the metadata references, so every snapshot reads as
// before; a second run finds nothing.
func TestOrphans(t *testing.T) {
	f := newOrphanFixture(t)
	e := f.e
	before := e.files(t, "")
	tableFiles := 0
	for _, p := range before {
		if strings.HasPrefix(p, "meterstore/power/") {
			tableFiles++
		}
	}

	rep, err := e.tier.Orphans(t.Context(), f.h, OrphanOptions{Before: f.before})
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, o := range rep.Orphans {
		rel, _ := filepath.Rel(e.dir, strings.TrimPrefix(o.Location, "file://"))
		found = append(found, rel)
	}
	slices.Sort(found)
	if !slices.Equal(found, f.orphans) {
		t.Fatalf("orphans found:\n%s\nwant:\n%s", strings.Join(found, "\n"), strings.Join(f.orphans, "\n"))
	}
	if rep.Young != 1 || rep.Deleted != 0 || rep.Live+rep.Young+len(rep.Orphans) != tableFiles {
		t.Fatalf("dry run: %d young, %d deleted, %d live of %d files", rep.Young, rep.Deleted, rep.Live, tableFiles)
	}
	if after := e.files(t, ""); !slices.Equal(after, before) {
		t.Fatal("a dry run changed the files")
	}

	rep, err = e.tier.Orphans(t.Context(), f.h, OrphanOptions{Before: f.before, Delete: true})
	if err != nil || rep.Deleted != len(f.orphans) {
		t.Fatalf("delete: %d of %d deleted, %v", rep.Deleted, len(f.orphans), err)
	}
	if err := f.check(t); err != nil {
		t.Fatal(err)
	}
	for _, keep := range []string{"metadata/version-hint.text", "metadata/v1.metadata.json"} {
		if !slices.Contains(e.files(t, ""), "meterstore/power/"+keep) {
			t.Fatalf("the metadata mirror's %s was deleted", keep)
		}
	}
	if rep, err := e.tier.Orphans(t.Context(), f.h, OrphanOptions{Before: time.Now().Add(time.Hour)}); err != nil || len(rep.Orphans) != 1 {
		// Only the young file is left to find, once the line passes it.
		t.Fatalf("after cleanup: %+v, %v", rep.Orphans, err)
	}
	if _, err := e.tier.Orphans(t.Context(), f.h, OrphanOptions{}); err == nil {
		t.Fatal("no safety line was accepted")
	}
}

// TestOrphansCheckHasTeeth: a cleanup that keeps only what the current
// snapshot references (and the metadata files) deletes the manifest lists
// and the data file older snapshots need; the check of TestOrphans says so.
func TestOrphansCheckHasTeeth(t *testing.T) {
	f := newOrphanFixture(t)
	e := f.e
	ice, err := e.tier.Iceberg(t.Context(), f.h)
	if err != nil {
		t.Fatal(err)
	}
	keep := map[string]bool{}
	cur := ice.CurrentSnapshot()
	keep[cur.ManifestList] = true
	fs, _ := ice.FS(t.Context())
	ms, err := cur.Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		keep[m.FilePath()] = true
	}
	for _, d := range dataFilesOf(t, ice, 0) {
		keep[d] = true
	}
	for _, p := range e.files(t, "") {
		loc := "file://" + filepath.Join(e.dir, p)
		if !strings.HasPrefix(p, "meterstore/power/") || keep[loc] || strings.HasSuffix(p, ".metadata.json") || strings.HasSuffix(p, ".text") || p == f.young {
			continue
		}
		if err := os.Remove(filepath.Join(e.dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	err = f.check(t)
	if err == nil {
		t.Fatal("the check passed a cleanup that kept the current snapshot's files only")
	}
	if !strings.Contains(err.Error(), "reads 0 records") {
		t.Fatalf("the check failed for another reason: %v", err)
	}
	if slices.Contains(e.files(t, ""), f.oldOnly) {
		t.Fatalf("fixture: the broken cleanup kept %s, which only older snapshots reference", f.oldOnly)
	}
	t.Logf("the check, as it should, refused: %v", err)
}

// TestOrphansRefusesASharedLocation: a table whose location is not named
// after it may share it with others, whose files would all look orphaned.
func TestOrphansRefusesASharedLocation(t *testing.T) {
	e := newEnv(t, Options{})
	h := e.ensure(t, loadProfile("power"))
	e.archive(t, h, jan2026, feb2026, quarterHours(0, jan2026, 4))
	ice, err := e.foreign.LoadTable(t.Context(), h.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = e.foreign.CommitTable(t.Context(), h.Identifier(), nil, []table.Update{table.NewSetLocationUpdate("file://" + e.dir)})
	if err != nil {
		t.Fatal(err)
	}
	_ = ice
	before := e.files(t, "")
	if _, err := e.tier.Orphans(t.Context(), h, OrphanOptions{Before: time.Now().Add(time.Hour), Delete: true}); err == nil || !strings.Contains(err.Error(), "not named after the table") {
		t.Fatalf("orphans at the warehouse's top: %v", err)
	}
	if !slices.Equal(e.files(t, ""), before) {
		t.Fatal("a refused cleanup deleted files")
	}
}

// dataFilesOf returns the data files of snapshot id of ice (0: the
// current one), as locations.
func dataFilesOf(t *testing.T, ice *table.Table, id int64) []string {
	t.Helper()
	opts := []table.ScanOption{}
	if id != 0 {
		opts = append(opts, table.WithSnapshotID(id))
	}
	tasks, err := ice.Scan(opts...).PlanFiles(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, task := range tasks {
		out = append(out, task.File.FilePath())
	}
	return out
}

// countAt returns the number of records snapshot id of ice reads.
func countAt(t *testing.T, ice *table.Table, id int64) int64 {
	t.Helper()
	n, err := tryCountAt(t, ice, id)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func tryCountAt(t *testing.T, ice *table.Table, id int64) (int64, error) {
	at, err := ice.Scan(table.WithSnapshotID(id)).ToArrowTable(t.Context())
	if err != nil {
		return 0, err
	}
	defer at.Release()
	return at.NumRows(), nil
}

// referencedBy returns the files h's metadata references, relative to the
// warehouse.
func referencedBy(t *testing.T, e *env, h *Table) []string {
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
	return refs
}

func copyTestFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// capturing is a catalog that records a commit's updates and refuses it,
// so that a test can write what the commit would have made elsewhere.
type capturing struct {
	*catalog.Catalog
	updates []table.Update
}

func (c *capturing) CommitTable(_ context.Context, _ table.Identifier, _ []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	c.updates = updates
	return nil, "", errors.New("captured")
}

// TestOrphansKeepForks: a commit a Hadoop-layout writer made in the
// metadata mirror (v<head+1>.metadata.json) refuses cleanup until it is
// resolved; moved aside, it is kept, and so are the data file, manifest
// and manifest list it references, which no log entry does.
func TestOrphansKeepForks(t *testing.T) {
	e := newEnv(t, Options{})
	h := e.ensure(t, loadProfile("power"))
	e.archive(t, h, jan2026, feb2026, quarterHours(0, jan2026, 8))
	e.archive(t, h, feb2026, mar2026, quarterHours(1, feb2026, 8))
	base, err := e.cat.LoadTable(t.Context(), h.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	head := 0
	for _, p := range e.files(t, ".metadata.json") {
		var n int
		if _, err := fmt.Sscanf(path.Base(p), "v%d.metadata.json", &n); err == nil && n > head {
			head = n
		}
	}
	dir := filepath.Join(e.dir, "meterstore", "power")
	data := filepath.Join(dir, "data", "fork-"+uuid.NewString()+".parquet")
	copyTestFile(t, filepath.Join(e.dir, e.files(t, ".parquet")[0]), data)
	had := e.files(t, "")
	capt := &capturing{Catalog: e.cat}
	fsF := func(ctx context.Context) (icebergio.IO, error) { return base.FS(ctx) }
	tx := table.New(base.Identifier(), base.Metadata(), base.MetadataLocation(), fsF, capt).NewTransaction()
	if err := tx.AddFiles(t.Context(), []string{"file://" + data}, iceberg.Properties{"engine": "spark"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(t.Context()); err == nil || len(capt.updates) == 0 {
		t.Fatalf("fixture: the captured commit: %v", err)
	}
	next, err := table.UpdateTableMetadata(base.Metadata(), capt.updates, base.MetadataLocation())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(next)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "metadata", fmt.Sprintf("v%d.metadata.json", head+1)), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	var forkOnly []string // what only the fork references
	for _, p := range e.files(t, "") {
		if !slices.Contains(had, p) && !strings.HasSuffix(p, ".metadata.json") {
			forkOnly = append(forkOnly, p)
		}
	}
	forkOnly = append(forkOnly, strings.TrimPrefix(data, e.dir+"/"))
	if len(forkOnly) != 3 {
		t.Fatalf("fixture: the fork's own files are %v, want a data file, a manifest and a manifest list", forkOnly)
	}

	line := time.Now().Add(time.Hour)
	var fe *catalog.ForkError
	if _, err := e.tier.Orphans(t.Context(), h, OrphanOptions{Before: line, Delete: true}); !errors.As(err, &fe) {
		t.Fatalf("cleanup with a fork in the mirror: %v", err)
	}
	moved, err := e.cat.ResolveForks(t.Context(), h.Identifier())
	if err != nil || len(moved) != 1 {
		t.Fatalf("resolve: %v, %v", moved, err)
	}
	rep, err := e.tier.Orphans(t.Context(), h, OrphanOptions{Before: line, Delete: true})
	if err != nil {
		t.Fatal(err)
	}
	left := e.files(t, "")
	for _, p := range forkOnly {
		if !slices.Contains(left, p) {
			t.Errorf("the fork's %s was deleted", p)
		}
	}
	if aside := filesUnder(left, "meterstore/power/metadata/"+catalog.ForkDir+"/"); len(aside) != 1 {
		t.Errorf("the fork moved aside: %v", aside)
	}
	for _, o := range rep.Orphans {
		t.Logf("orphan: %s", o.Location)
	}
}

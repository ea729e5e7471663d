package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	icetable "github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/consensus/postgres"
)

// chainFixture is tamperFixture with a third day archived on its own, so
// that the current snapshot has a parent and manifests of earlier
// archivals: what an attacker with write access to the warehouse copies
// around. It returns the store, its env and the current table metadata.
func chainFixture(t *testing.T) (*Store, *testEnv, icetable.Metadata) {
	t.Helper()
	ctx := t.Context()
	s, e, _, _ := tamperFixture(t)
	if err := s.CreatePartitions(ctx, dayN(6), dayN(12)); err != nil {
		t.Fatal(err)
	}
	// Two channels: two data files in the archival's one manifest.
	var rows []Reading
	for slot := range 4 {
		ch := []string{"A", "B"}[slot%2]
		rows = append(rows, qh(3, 4, slot, ch, 1, int64(4000+slot)))
	}
	mustWrite(t, s, rows)
	if _, err := s.Archive(ctx, "power", dayN(7)); err != nil {
		t.Fatal(err)
	}
	ice, err := s.cold.Iceberg(ctx, s.tables[0].cold)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustQuery(t, s, `SELECT count(*) FROM readings_versions`).Rows[0][0]; got != int64(12) {
		t.Fatalf("fixture: %v readings, want 12", got)
	}
	if v := s.Verify(ctx, VerifyOptions{Deep: true})[0]; !v.OK() || v.PinnedSnapshots != v.Snapshots || v.Snapshots < 3 {
		t.Fatalf("fixture: deep verification of an intact table: %+v", v)
	}
	return s, e, ice.Metadata()
}

// another returns e as another process sees it: the same database and
// warehouse through a catalog of its own, which has read and cached
// nothing yet.
func (e *testEnv) another(t *testing.T) *testEnv {
	t.Helper()
	ctx := t.Context()
	wh, err := catalog.OpenWarehouse(ctx, "file://"+e.dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wh.Bucket.Close() })
	log := e.log
	if log == "" {
		log = LogPostgres
	}
	cat, closeCat, err := OpenCatalog(ctx, CatalogOptions{Log: log, Warehouse: wh, Postgres: e.pool.Config(), LogOptions: postgres.Options{Schema: "meterstore"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeCat)
	return &testEnv{pool: e.pool, cat: cat, dir: e.dir, log: log}
}

// localPath is the path of a file:// location of the test warehouse.
func localPath(loc string) string { return strings.TrimPrefix(loc, "file://") }

// manifestsOf returns the manifests snapshot snap lists.
func manifestsOf(t *testing.T, meta icetable.Metadata, snap *icetable.Snapshot) []iceberg.ManifestFile {
	t.Helper()
	f, err := os.Open(localPath(snap.ManifestList))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ms, err := iceberg.ReadManifestList(f)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// newest returns the manifest of ms added last, by its snapshot.
func newest(t *testing.T, meta icetable.Metadata, ms []iceberg.ManifestFile) iceberg.ManifestFile {
	t.Helper()
	cur := meta.CurrentSnapshot().SnapshotID
	for _, m := range ms {
		if m.SnapshotID() == cur && m.ManifestContent() == iceberg.ManifestContentData {
			return m
		}
	}
	t.Fatalf("no manifest of the current snapshot %d among %d", cur, len(ms))
	return nil
}

// copyOver writes the bytes of src over dst, keeping dst's name.
func copyOver(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// An attack alters what the current snapshot of power plans from, and
// returns the file it altered (which every finding must name) and how to
// undo it.
type attack func(t *testing.T, meta icetable.Metadata) (object string, undo func())

// keep saves path and returns its restore.
func keep(t *testing.T, path string) func() {
	t.Helper()
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := os.WriteFile(path, orig, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// swapManifest copies the manifest an earlier archival added over the one
// the newest added, as the probe did: the newest day disappears.
func swapManifest(t *testing.T, meta icetable.Metadata) (string, func()) {
	cur := meta.CurrentSnapshot()
	ms := manifestsOf(t, meta, cur)
	dst := newest(t, meta, ms)
	for _, m := range ms {
		if m.FilePath() != dst.FilePath() && m.ManifestContent() == iceberg.ManifestContentData {
			undo := keep(t, localPath(dst.FilePath()))
			copyOver(t, localPath(m.FilePath()), localPath(dst.FilePath()))
			return dst.FilePath(), undo
		}
	}
	t.Fatal("fixture: a single manifest")
	return "", nil
}

// swapManifestList copies the parent snapshot's manifest list over the
// current one's.
func swapManifestList(t *testing.T, meta icetable.Metadata) (string, func()) {
	cur := meta.CurrentSnapshot()
	parent := meta.SnapshotByID(*cur.ParentSnapshotID)
	undo := keep(t, localPath(cur.ManifestList))
	copyOver(t, localPath(parent.ManifestList), localPath(cur.ManifestList))
	return cur.ManifestList, undo
}

// dropManifestEntry rewrites the newest manifest with its data file left
// out: a valid manifest that lists nothing.
func dropManifestEntry(t *testing.T, meta icetable.Metadata) (string, func()) {
	cur := meta.CurrentSnapshot()
	m := newest(t, meta, manifestsOf(t, meta, cur))
	path := localPath(m.FilePath())
	undo := keep(t, path)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := iceberg.ReadManifest(m, f, true)
	f.Close()
	if err != nil || len(entries) == 0 {
		t.Fatalf("fixture: manifest %s: %d entries, %v", path, len(entries), err)
	}
	spec := meta.PartitionSpec()
	var buf bytes.Buffer
	if _, err := iceberg.WriteManifest(path, &buf, meta.Version(), spec, meta.CurrentSchema(), cur.SnapshotID, entries[1:]); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return m.FilePath(), undo
}

// alterDigestIndex lists the newest data file twice in the current
// snapshot's digest index: valid JSON that no longer has the SHA-256 the
// snapshot committed.
func alterDigestIndex(t *testing.T, meta icetable.Metadata) (string, func()) {
	loc := meta.CurrentSnapshot().Summary.Properties["meterstore.digests"]
	path := localPath(loc)
	undo := keep(t, path)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var idx map[string]any
	if err := json.Unmarshal(data, &idx); err != nil {
		t.Fatal(err)
	}
	files := idx["files"].([]any)
	idx["files"] = files[:len(files)-1]
	out, err := json.Marshal(idx)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return loc, undo
}

// alterMetadata changes one digit of the row count the current snapshot's
// summary records, as the probe did: same size, valid JSON.
func alterMetadata(t *testing.T, meta icetable.Metadata) (string, func()) {
	dir := filepath.Dir(localPath(meta.CurrentSnapshot().ManifestList))
	var current string
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		n := e.Name()
		if strings.HasSuffix(n, ".metadata.json") && !strings.HasPrefix(n, "v") && n > current {
			current = n
		}
	}
	path := filepath.Join(dir, current)
	undo := keep(t, path)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	key := `"meterstore.rows":"`
	i := bytes.LastIndex(data, []byte(key))
	if i < 0 {
		t.Fatalf("fixture: %s records no row count", path)
	}
	d := &data[i+len(key)]
	*d = '0' + (*d-'0'+1)%10
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return "file://" + path, undo
}

// deleteDataFile removes the newest day's data file.
func deleteDataFile(t *testing.T, meta icetable.Metadata) (string, func()) {
	cur := meta.CurrentSnapshot()
	m := newest(t, meta, manifestsOf(t, meta, cur))
	f, err := os.Open(localPath(m.FilePath()))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := iceberg.ReadManifest(m, f, true)
	f.Close()
	if err != nil || len(entries) == 0 {
		t.Fatalf("fixture: manifest %s: %d entries, %v", m.FilePath(), len(entries), err)
	}
	loc := entries[0].DataFile().FilePath()
	undo := keep(t, localPath(loc))
	if err := os.Remove(localPath(loc)); err != nil {
		t.Fatal(err)
	}
	return loc, undo
}

// TestBrokenChainIsCaughtAndRefused: each way a writer of the warehouse
// can make a read plan other files than committed, or none, turns the
// table unhealthy in the status of a process that starts after it, before
// any read or verification ran; is refused by that process's reads naming
// the object (every read of the table, but for a deleted data file only
// the reads that plan it); and is caught by a plain verification naming
// it. Once restored, a verification clears it and every reading answers
// again.
func TestBrokenChainIsCaughtAndRefused(t *testing.T) {
	all := `SELECT count(*) FROM readings_versions`
	newestDay := `SELECT count(*) FROM readings WHERE "from" >= ` + ts(dayN(4))
	firstDay := `SELECT count(*) FROM readings WHERE "from" < ` + ts(dayN(1))
	for _, tc := range []struct {
		name   string
		attack attack
		want   error    // what a refused read's error wraps
		answer []string // statements still answered
	}{
		{"swapped manifest", swapManifest, ErrAlteredFile, nil},
		{"swapped manifest list", swapManifestList, ErrAlteredFile, nil},
		{"dropped manifest entry", dropManifestEntry, ErrAlteredFile, nil},
		{"altered digest index", alterDigestIndex, ErrAlteredFile, nil},
		{"altered metadata", alterMetadata, ErrAlteredFile, nil},
		{"deleted data file", deleteDataFile, ErrMissingFile, []string{firstDay}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			s, e, meta := chainFixture(t)
			object, undo := tc.attack(t, meta)
			base := filepath.Base(localPath(object))
			refused := func(sql string) {
				t.Helper()
				res, err := e.another(t).open(t, Options{}).Query(ctx, "power", sql)
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), base) {
					t.Fatalf("%s after the attack: %v, %v", sql, res, err)
				}
			}
			st := e.another(t).open(t, Options{}).Status(ctx, dayN(8))[0]
			if st.Healthy || !errors.Is(st.Err, tc.want) || !strings.Contains(st.Err.Error(), base) {
				t.Fatalf("status after the attack: healthy %v, %v", st.Healthy, st.Err)
			}
			for _, sql := range []string{all, newestDay, firstDay} {
				if slices.Contains(tc.answer, sql) {
					if got := mustQuery(t, e.another(t).open(t, Options{}), sql).Rows[0][0]; got != int64(4) {
						t.Fatalf("%s, which needs no altered file: %v", sql, got)
					}
					continue
				}
				refused(sql)
			}
			v := s.Verify(ctx, VerifyOptions{})[0]
			t.Logf("verification: %q", v.Problems)
			if v.OK() || !strings.Contains(strings.Join(v.Problems, "\n"), base) {
				t.Fatalf("verification after the attack names no %s: %+v", base, v)
			}

			undo()
			if v := s.Verify(ctx, VerifyOptions{}); !v[0].OK() {
				t.Fatalf("verification after the restore: %+v", v[0])
			}
			if st := e.another(t).open(t, Options{}).Status(ctx, dayN(8))[0]; !st.Healthy {
				t.Fatalf("status after the restore: %+v", st)
			}
			if got := mustQuery(t, e.another(t).open(t, Options{}), all).Rows[0][0]; got != int64(12) {
				t.Fatalf("after the restore: %v readings, want 12", got)
			}
		})
	}
}

// TestAlteredMirrorIsTampering: the mirror's copy of the current version
// (v<N>.metadata.json, what readers without a catalog read) edited in
// place is reported by a verification as a mirror file that is not the
// committed one, not as a commit another writer made; the committed
// metadata is intact, so reads answer. Resolving moves it aside and
// mirrors the log's version again.
func TestAlteredMirrorIsTampering(t *testing.T) {
	ctx := t.Context()
	s, e, meta := chainFixture(t)
	dir := filepath.Dir(localPath(meta.CurrentSnapshot().ManifestList))
	hint, err := os.ReadFile(filepath.Join(dir, "version-hint.text"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "v"+strings.TrimSpace(string(hint))+".metadata.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	key := `"meterstore.rows":"`
	i := bytes.LastIndex(data, []byte(key))
	if i < 0 {
		t.Fatalf("fixture: %s records no row count", path)
	}
	d := &data[i+len(key)]
	*d = '0' + (*d-'0'+1)%10
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	v := s.Verify(ctx, VerifyOptions{})[0]
	t.Logf("verification: %q", v.Problems)
	problems := strings.Join(v.Problems, "\n")
	if v.OK() || len(v.Forks) != 1 || !v.Forks[0].Altered || !strings.Contains(problems, filepath.Base(path)) ||
		!strings.Contains(problems, "altered in place") || strings.Contains(problems, "did not make") {
		t.Fatalf("verification of an altered mirror file: %+v", v)
	}
	if st := e.another(t).open(t, Options{}).Status(ctx, dayN(8))[0]; st.Healthy || st.MirrorForks != 1 {
		t.Fatalf("status with an altered mirror file: %+v", st)
	}
	if got := mustQuery(t, e.another(t).open(t, Options{}), `SELECT count(*) FROM readings_versions`).Rows[0][0]; got != int64(12) {
		t.Fatalf("a read with the mirror altered: %v readings, want 12", got)
	}
	if _, err := s.ResolveForks(ctx, "power"); err != nil {
		t.Fatal(err)
	}
	if v := s.Verify(ctx, VerifyOptions{}); !v[0].OK() {
		t.Fatalf("verification after resolving: %+v", v[0])
	}
}

// TestPurgeForgetsFindings: a table purged while a finding stood is
// declared again under its name healthy, and its cold reads answer.
func TestPurgeForgetsFindings(t *testing.T) {
	ctx := t.Context()
	s, e, meta := chainFixture(t)
	swapManifest(t, meta)
	if st := e.another(t).open(t, Options{}).Status(ctx, dayN(8))[0]; st.Healthy || st.AlteredFiles != 1 {
		t.Fatalf("fixture: status after the attack: %+v", st)
	}
	if _, err := s.Purge(ctx, "power", "power"); err != nil {
		t.Fatal(err)
	}
	again := e.another(t).open(t, Options{})
	if err := again.CreatePartitions(ctx, dayN(0), dayN(12)); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, again, []Reading{qh(1, 0, 0, "A", 1, 1000)})
	if _, err := again.Archive(ctx, "power", dayN(4)); err != nil {
		t.Fatal(err)
	}
	if st := again.Status(ctx, dayN(8))[0]; !st.Healthy || st.AlteredFiles != 0 {
		t.Fatalf("status of the table declared again: %+v", st)
	}
	if got := mustQuery(t, again, `SELECT count(*) FROM readings`).Rows[0][0]; got != int64(1) {
		t.Fatalf("the table declared again: %v readings, want 1", got)
	}
}

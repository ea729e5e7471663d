package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// warehouseFiles returns the files under dir/prefix, relative to dir.
func warehouseFiles(t *testing.T, dir, prefix string) []string {
	t.Helper()
	var out []string
	root := filepath.Join(dir, prefix)
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestOrphans archives several windows, plants what failed writers leave
// (a data file, a manifest, a metadata file) and a young unreferenced
// file, and cleans up with a wall clock two days ahead, so that every file
// but the young one is past the default safety age. The planted files go,
// the young one stays, and the table answers as before: its readings and
// every snapshot as of which it can be read.
func TestOrphans(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	wall := time.Now().Add(48 * time.Hour)
	s := e.open(t, Options{Now: NowOptions{WallClock: func() time.Time { return wall }}})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(10)); err != nil {
		t.Fatal(err)
	}
	for d := range 6 {
		mustWrite(t, s, []Reading{qh(1, d, 4, "A", 1, int64(1000+d)), qh(2, d, 9, "B", 1, int64(2000+d))})
	}
	for _, now := range []int{4, 5, 6, 7} {
		if _, err := s.Archive(ctx, "power", dayN(now)); err != nil {
			t.Fatal(err)
		}
	}
	snaps, err := s.Snapshots(ctx, "power")
	if err != nil || len(snaps) < 4 {
		t.Fatalf("fixture: %d snapshots, %v", len(snaps), err)
	}
	const q = `SELECT malo_id, channel, "from", version, value FROM readings_versions ORDER BY ALL`
	read := func() map[int64][][]any {
		t.Helper()
		out := map[int64][][]any{0: mustQuery(t, s, q).Rows}
		for _, sn := range snaps {
			res, err := s.QueryAt(ctx, "power", q, ReadOptions{AsOfSnapshot: sn.ID})
			if err != nil {
				t.Fatalf("as of snapshot %d: %v", sn.ID, err)
			}
			out[sn.ID] = res.Rows
		}
		return out
	}
	want := read()

	tbl := filepath.Join(e.dir, "meterstore", "power")
	files := warehouseFiles(t, e.dir, "meterstore/power")
	var data, manifest, metadata string
	for _, f := range files {
		switch {
		case strings.HasSuffix(f, ".parquet") && data == "":
			data = f
		case strings.Contains(f, "-m") && strings.HasSuffix(f, ".avro") && manifest == "":
			manifest = f
		case strings.HasSuffix(f, ".metadata.json") && !strings.HasPrefix(filepath.Base(f), "v") && metadata == "":
			metadata = f
		}
	}
	var planted []string
	plant := func(from, to string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(e.dir, from))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o644); err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(e.dir, to)
		return rel
	}
	planted = append(planted,
		plant(data, filepath.Join(filepath.Dir(filepath.Join(e.dir, data)), "00000-0-"+uuid.NewString()+".parquet")),
		plant(manifest, filepath.Join(tbl, "metadata", uuid.NewString()+"-m0.avro")),
		plant(metadata, filepath.Join(tbl, "metadata", fmt.Sprintf("00042-%s.metadata.json", uuid.NewString()))))
	slices.Sort(planted)
	young := plant(data, filepath.Join(tbl, "data", "young-"+uuid.NewString()+".parquet"))
	if err := os.Chtimes(filepath.Join(e.dir, young), wall, wall); err != nil {
		t.Fatal(err)
	}

	if _, err := s.Orphans(ctx, "power", OrphanOptions{OlderThan: -time.Hour, Delete: true}); err == nil {
		t.Fatal("a negative safety age was accepted")
	}
	rep, err := s.Orphans(ctx, "power", OrphanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, o := range rep.Orphans {
		rel, _ := filepath.Rel(e.dir, strings.TrimPrefix(o.Location, "file://"))
		found = append(found, rel)
	}
	if !slices.Equal(found, planted) || rep.Young != 1 || rep.Deleted != 0 {
		t.Fatalf("dry run: orphans %v (want %v), %d young, %d deleted", found, planted, rep.Young, rep.Deleted)
	}
	rep, err = s.Orphans(ctx, "power", OrphanOptions{Delete: true})
	if err != nil || rep.Deleted != len(planted) {
		t.Fatalf("delete: %d deleted, %v", rep.Deleted, err)
	}
	after := warehouseFiles(t, e.dir, "meterstore/power")
	for _, p := range planted {
		if slices.Contains(after, p) {
			t.Errorf("orphan %s left", p)
		}
	}
	if !slices.Contains(after, young) {
		t.Errorf("the young file %s was deleted", young)
	}
	if got := read(); !reflect.DeepEqual(got, want) {
		t.Errorf("the table reads differently after cleanup:\n got %v\nwant %v", got, want)
	}
	for _, v := range s.Verify(ctx, VerifyOptions{}) {
		if !v.OK() {
			t.Errorf("verify after cleanup: %v %v", v.Problems, v.Err)
		}
	}
}

// TestMaintenanceRemovesOrphans: a loop with orphan removal on deletes a
// planted orphan past the safety age in its first cycle, keeps a young one
// and every referenced file, and lists the warehouse again only a day of
// cycle time later; a loop with it off deletes nothing.
func TestMaintenanceRemovesOrphans(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	wall := time.Now().Add(48 * time.Hour)
	s := e.open(t, Options{Now: NowOptions{WallClock: func() time.Time { return wall }}})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(10)); err != nil {
		t.Fatal(err)
	}
	for d := range 3 {
		mustWrite(t, s, []Reading{qh(1, d, 4, "A", 1, int64(1000+d))})
	}
	if _, err := s.Archive(ctx, "power", dayN(4)); err != nil {
		t.Fatal(err)
	}
	const q = `SELECT malo_id, channel, "from", version, value FROM readings_versions ORDER BY ALL`
	want := mustQuery(t, s, q).Rows

	tbl := filepath.Join(e.dir, "meterstore", "power")
	var data string
	for _, f := range warehouseFiles(t, e.dir, "meterstore/power") {
		if strings.HasSuffix(f, ".parquet") {
			data = f
		}
	}
	b, err := os.ReadFile(filepath.Join(e.dir, data))
	if err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(tbl, "data", "00000-0-"+uuid.NewString()+".parquet")
	young := filepath.Join(tbl, "data", "00000-0-"+uuid.NewString()+".parquet")
	for _, p := range []string{old, young} {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(young, wall, wall); err != nil {
		t.Fatal(err)
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }

	// Off, the default of a Maintenance: nothing listed, nothing deleted.
	if out := s.Maintenance().Cycle(ctx, dayN(4)); out.Tables[0].Orphans != nil || !exists(old) {
		t.Fatalf("a loop without orphan removal: %+v, orphan there: %v", out.Tables[0].Orphans, exists(old))
	}
	m := s.Maintenance().RemoveOrphans(24 * time.Hour)
	out := m.Cycle(ctx, dayN(4))
	rep := out.Tables[0].Orphans
	if err := out.Tables[0].Err; err != nil {
		t.Fatal(err)
	}
	if rep == nil || rep.Deleted != 1 || rep.Young != 1 || exists(old) || !exists(young) {
		t.Fatalf("first cycle: %+v; old orphan there: %v, young one there: %v", rep, exists(old), exists(young))
	}
	if got := mustQuery(t, s, q).Rows; !reflect.DeepEqual(got, want) {
		t.Fatalf("after removal the table reads %v, want %v", got, want)
	}
	if out := m.Cycle(ctx, dayN(4).Add(time.Hour)); out.Tables[0].Orphans != nil {
		t.Fatalf("an hour later the loop listed again: %+v", out.Tables[0].Orphans)
	}
	if out := m.Cycle(ctx, dayN(5)); out.Tables[0].Orphans == nil || out.Tables[0].Err != nil {
		t.Fatalf("a day later the loop did not list: %+v", out.Tables[0])
	}
}

// TestMaintenanceOrphansUnderLease runs the cycle of two replicas of one
// deployment with orphan removal on: while one holds the table's archive
// lease, the other's cycle lists and removes nothing and stays healthy;
// once the lease is free, its next cycle, an hour later, removes the
// orphan: a cycle that left the step to another replica did not count as
// the day's removal.
func TestMaintenanceOrphansUnderLease(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	wall := time.Now().Add(48 * time.Hour)
	opts := Options{Now: NowOptions{WallClock: func() time.Time { return wall }}}
	holder, replica := e.open(t, opts), e.open(t, opts)
	if err := replica.CreatePartitions(ctx, dayN(0), dayN(10)); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, replica, []Reading{qh(1, 0, 4, "A", 1, 1000)})
	if _, err := replica.Archive(ctx, "power", dayN(3)); err != nil {
		t.Fatal(err)
	}
	var data string
	for _, f := range warehouseFiles(t, e.dir, "meterstore/power") {
		if strings.HasSuffix(f, ".parquet") {
			data = f
		}
	}
	b, err := os.ReadFile(filepath.Join(e.dir, data))
	if err != nil {
		t.Fatal(err)
	}
	orphan := filepath.Join(e.dir, "meterstore", "power", "data", "00000-0-"+uuid.NewString()+".parquet")
	if err := os.WriteFile(orphan, b, 0o644); err != nil {
		t.Fatal(err)
	}
	exists := func() bool { _, err := os.Stat(orphan); return err == nil }

	m := replica.Maintenance().RemoveOrphans(24 * time.Hour)
	err = holder.arch.WithLease(ctx, "power", func(context.Context) error {
		out := m.Cycle(ctx, dayN(3))
		to := out.Tables[0]
		if to.Archive.Status != ArchiveLeaseContended || to.Orphans != nil || to.Err != nil || !out.Healthy() {
			t.Errorf("the contended replica's cycle: archive %v, orphans %+v, err %v, healthy %v; want lease contended, no removal, healthy",
				to.Archive.Status, to.Orphans, to.Err, out.Healthy())
		}
		if !exists() {
			t.Error("the replica without the lease deleted the orphan")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out := m.Cycle(ctx, dayN(3).Add(time.Hour))
	if rep := out.Tables[0].Orphans; rep == nil || rep.Deleted != 1 || exists() {
		t.Fatalf("the cycle after the lease was freed: %+v, orphan there: %v; want it deleted", rep, exists())
	}
}

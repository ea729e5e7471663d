package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/consensus/bloblog"
	"github.com/meterstore/meterstore/internal/pgtest"
)

// adminDeployment writes a deployment on the test database whose catalog
// log lives in the warehouse (so a test can commit as a foreign engine
// would) and whose snapshot expiry keeps one snapshot of any age beyond a
// second. It returns the -c flag and the warehouse directory.
func adminDeployment(t *testing.T) ([]string, string) {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "meterstore.toml")
	mustRun(t, "init", cfgPath)
	tmpl, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	wh := filepath.Join(dir, "wh")
	text := string(tmpl)
	for old, new := range map[string]string{
		`url = ""`:                                 fmt.Sprintf("url = %q", pgtest.NewDB(t)),
		`data_dir = "meterstore-data"`:             fmt.Sprintf("data_dir = %q", dir),
		`url = "file://meterstore-data/warehouse"`: fmt.Sprintf("url = %q", "file://"+wh),
		`log = "postgres"`:                         `log = "object_store"`,
		`snapshot_retention = "3653d"`:             `snapshot_retention = "1s"`,
		`min_snapshots = 100`:                      `min_snapshots = 1`,
	} {
		if !strings.Contains(text, old) {
			t.Fatalf("the template has no %s", old)
		}
		text = strings.Replace(text, old, new, 1)
	}
	if err := os.WriteFile(cfgPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c := []string{"-c", cfgPath}
	mustRun(t, append([]string{"check"}, c...)...)
	return c, wh
}

// foreignAppend commits an empty append to table name without the
// watermark, through a catalog without MeterStore's check, as another
// engine would.
func foreignAppend(t *testing.T, wh, name string) {
	t.Helper()
	w, err := catalog.OpenWarehouse(t.Context(), "file://"+wh)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Bucket.Close()
	l, err := bloblog.New(w.Bucket, "_log/")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.New(catalog.Options{Warehouse: w, Log: l})
	if err != nil {
		t.Fatal(err)
	}
	ice, err := cat.LoadTable(t.Context(), table.Identifier{"meterstore", name})
	if err != nil {
		t.Fatal(err)
	}
	tx := ice.NewTransaction()
	if err := tx.AddFiles(t.Context(), nil, iceberg.Properties{"engine": "spark"}, true); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// snapshotCount returns the number of snapshots meterstore snapshots lists.
func snapshotCount(t *testing.T, c []string, name string) int {
	t.Helper()
	out := mustRun(t, append([]string{"snapshots", "--table", name}, c...)...)
	return strings.Count(out, "\n") - 1 // the header
}

// kept counts the lines of orphans' list of kept files whose reason
// begins with why ("" for every line).
func kept(out, why string) int {
	_, list, ok := strings.Cut(out, "\nkept ")
	if !ok {
		return 0
	}
	n := 0
	for _, l := range strings.Split(list, "\n")[1:] {
		f := strings.Fields(l)
		if len(f) < 4 || strings.Contains(l, " orphan files, ") {
			continue
		}
		if strings.Contains(l, "  "+why) {
			n++
		}
	}
	return n
}

// TestOperatorCommands drives reassert, expire and orphans: reassert
// commits only after a foreign commit; expire removes all but the newest
// snapshot under a one-second retention; the manifest lists it leaves are
// kept while younger than the safety age, listed and deleted once older,
// with the young file planted kept; the table reads the same and verifies
// clean throughout.
func TestOperatorCommands(t *testing.T) {
	c, wh := adminDeployment(t)
	mustRun(t, append([]string{"create", "--now", "2026-03-01T00:00:00Z"}, c...)...)
	deliv := filepath.Join(t.TempDir(), "day.csv")
	os.WriteFile(deliv, []byte(deliveryCSV(2, -1)), 0o644)
	mustRun(t, append([]string{"ingest", "--table", "power", deliv}, c...)...)
	mustRun(t, append([]string{"archive", "--now", "2026-05-01T00:00:00Z"}, c...)...)
	count := func() string {
		t.Helper()
		out := mustRun(t, append([]string{"query", "--table", "power", "--format", "csv", "--now", "2026-05-01T00:00:00Z",
			`SELECT count(*) AS n FROM readings`}, c...)...)
		return strings.TrimSpace(out)
	}
	if got := count(); got != "n\n192" {
		t.Fatalf("after archival: %q", got)
	}

	if out := mustRun(t, append([]string{"reassert", "--table", "power"}, c...)...); !strings.Contains(out, "power: nothing to do") {
		t.Errorf("reassert without a foreign commit: %s", out)
	}
	foreignAppend(t, wh, "power")
	before := snapshotCount(t, c, "power")
	if out := mustRun(t, append([]string{"reassert", "--table", "power"}, c...)...); !strings.Contains(out, "power: watermark re-stamped") {
		t.Errorf("reassert after a foreign commit: %s", out)
	}
	if n := snapshotCount(t, c, "power"); n != before+1 {
		t.Errorf("reassert: %d snapshots, want %d", n, before+1)
	}
	if out := mustRun(t, append([]string{"reassert", "--table", "power"}, c...)...); !strings.Contains(out, "power: nothing to do") {
		t.Errorf("reassert twice: %s", out)
	}
	if _, code := run(t, append([]string{"reassert", "--table", "nosuch"}, c...)...); code != exitPermanent {
		t.Errorf("reassert of an undeclared table: exit %d", code)
	}

	total := snapshotCount(t, c, "power")
	now := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	out := mustRun(t, append([]string{"expire", "--table", "power", "--now", now}, c...)...)
	if want := fmt.Sprintf("power: %d snapshots expired, 1 kept", total-1); !strings.Contains(out, want) {
		t.Fatalf("expire: %s\nwant %q", out, want)
	}
	if n := snapshotCount(t, c, "power"); n != 1 {
		t.Fatalf("after expiry: %d snapshots", n)
	}
	if got := count(); got != "n\n192" {
		t.Fatalf("after expiry: %q", got)
	}

	// Just now, the manifest lists expiry left are younger than a day.
	orphans := regexp.MustCompile(`power: (\d+) orphan files, \d+ bytes, (listed|\d+ deleted); (\d+) unreferenced files newer than`)
	summary := func(out string) (found, young int) {
		t.Helper()
		m := orphans.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("orphans: no summary in\n%s", out)
		}
		found, _ = strconv.Atoi(m[1])
		young, _ = strconv.Atoi(m[3])
		return found, young
	}
	out = mustRun(t, append([]string{"orphans", "--table", "power"}, c...)...)
	if found, young := summary(out); found != 0 || young < total-1 {
		t.Fatalf("orphans of a fresh expiry: %d found, %d young, want 0 and at least %d\n%s", found, young, total-1, out)
	}
	// What it keeps is listed with the reason: the young manifest lists,
	// and the files the current snapshot references.
	if n := kept(out, "modified after the safety line"); n < total-1 {
		t.Errorf("orphans of a fresh expiry lists %d files kept for their age, want at least %d\n%s", n, total-1, out)
	}
	if kept(out, "referenced by the current metadata") == 0 || !strings.Contains(out, ".parquet") {
		t.Errorf("orphans lists no referenced file kept\n%s", out)
	}
	// --older-than 0s keeps nothing for its age: the manifest lists expiry
	// left are orphans at once, and every file kept is kept for a
	// reference or as the catalog's mirror, each listed with why.
	out = mustRun(t, append([]string{"orphans", "--table", "power", "--older-than", "0s"}, c...)...)
	if found, young := summary(out); found < total-1 || young != 0 {
		t.Fatalf("orphans --older-than 0s of a fresh expiry: %d found, %d young, want at least %d and 0\n%s", found, young, total-1, out)
	}
	referenced, mirror := kept(out, "referenced by the current metadata"), kept(out, "the catalog's Hadoop-layout mirror")
	if n := kept(out, ""); referenced == 0 || mirror == 0 || n != referenced+mirror {
		t.Errorf("orphans --older-than 0s: %d files kept, %d referenced, %d the mirror's\n%s", n, referenced, mirror, out)
	}

	// Two days on, for the files; and one file written just now.
	tbl := filepath.Join(wh, "meterstore", "power")
	old := time.Now().Add(-48 * time.Hour)
	err := filepath.WalkDir(tbl, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return os.Chtimes(p, old, old)
	})
	if err != nil {
		t.Fatal(err)
	}
	young := filepath.Join(tbl, "data", "young.parquet")
	os.WriteFile(young, []byte("a write under way"), 0o644)

	out = mustRun(t, append([]string{"orphans", "--table", "power", "--older-than", "1h"}, c...)...)
	found, nyoung := summary(out)
	// What expiry leaves: each expired snapshot's manifest list and the
	// digest index that pinned it.
	listed, _, _ := strings.Cut(out, "\nkept ")
	if found < total-1 || nyoung != 1 || strings.Count(listed, "/metadata/snap-")+strings.Count(listed, "/metadata/digests-") != found {
		t.Fatalf("orphans two days after expiry: %d found (want at least %d, all manifest lists and digest indexes), %d young\n%s", found, total-1, nyoung, out)
	}
	t.Logf("%d snapshots, %d expired, %d orphans found", total, total-1, found)
	out = mustRun(t, append([]string{"orphans", "--table", "power", "--older-than", "1h", "--delete"}, c...)...)
	if !strings.Contains(out, fmt.Sprintf("%d deleted", found)) {
		t.Fatalf("orphans --delete: %s", out)
	}
	if f, y := summary(mustRun(t, append([]string{"orphans", "--table", "power", "--older-than", "1h"}, c...)...)); f != 0 || y != 1 {
		t.Fatalf("after --delete: %d found, %d young", f, y)
	}
	if _, err := os.Stat(young); err != nil {
		t.Fatalf("the young file: %v", err)
	}
	if got := count(); got != "n\n192" {
		t.Fatalf("after orphan cleanup: %q", got)
	}
	mustRun(t, append([]string{"verify"}, c...)...)
	if _, code := run(t, append([]string{"orphans", "--table", "power", "--older-than", "-1h", "--delete"}, c...)...); code != exitPermanent {
		t.Errorf("orphans with a negative age: exit %d", code)
	}
}

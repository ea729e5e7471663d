package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/meterstore/meterstore/internal/tampertest"
)

// TestVerify: verify exits 0 on an intact archived deployment, and 1 when a
// data file of the current snapshot is gone or a partition was detached by
// hand, naming what it found; status notices the file too.
func TestVerify(t *testing.T) {
	dir, pgURL, c := maintainedDeployment(t)
	const now = maintainedAt

	out := mustRun(t, append([]string{"verify"}, c...)...)
	if !strings.Contains(out, "power") {
		t.Errorf("verify of an intact deployment:\n%s", out)
	}

	// A data file of the archived table disappears.
	var files []string
	filepath.WalkDir(filepath.Join(dir, "wh"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".parquet") && strings.Contains(path, "power") && !inRollup(path) {
			files = append(files, path)
		}
		return nil
	})
	if len(files) == 0 {
		t.Fatal("no data file of power in the warehouse")
	}
	aside := filepath.Join(dir, "aside.parquet")
	if err := os.Rename(files[0], aside); err != nil {
		t.Fatal(err)
	}
	// Status lists the data files once per proof of the snapshot.
	out, code := run(t, append([]string{"status", "--now", now}, c...)...)
	if code != exitPermanent || !strings.Contains(out, filepath.Base(files[0])) || !strings.Contains(out, "missing") {
		t.Errorf("status with a data file gone: exit %d\n%s", code, out)
	}
	out, code = run(t, append([]string{"verify"}, c...)...)
	t.Logf("verify with a data file gone:\n%s", out)
	if code != exitPermanent || !strings.Contains(out, filepath.Base(files[0])) || !strings.Contains(out, "missing") {
		t.Errorf("verify with a data file gone: exit %d\n%s", code, out)
	}
	// Truncated, it is found too.
	if err := os.WriteFile(files[0], []byte("PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := run(t, append([]string{"verify"}, c...)...); code != exitPermanent || !strings.Contains(out, "has 4 bytes") {
		t.Errorf("verify with a data file truncated: exit %d\n%s", code, out)
	}
	if err := os.Rename(aside, files[0]); err != nil {
		t.Fatal(err)
	}
	mustRun(t, append([]string{"verify"}, c...)...)

	// A partition ahead of W detached by hand is an invariant violation,
	// not an archival to resume.
	conn, err := pgx.Connect(t.Context(), pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	if _, err := conn.Exec(t.Context(), `ALTER TABLE meterstore.power DETACH PARTITION meterstore.power_p20260505`); err != nil {
		t.Fatal(err)
	}
	out, code = run(t, append([]string{"verify"}, c...)...)
	t.Logf("verify with a partition detached by hand:\n%s", out)
	if code != exitPermanent || !strings.Contains(out, "power_p20260505") || !strings.Contains(out, "nor recorded by an archival") {
		t.Errorf("verify with a partition detached by hand: exit %d\n%s", code, out)
	}
}

// TestVerifyDeep: a data file replaced by a valid Parquet file of the same
// size and row count in which 1.001 reads 1000.001: verify finds the value
// column's bounds in its footer moved, verify --deep its SHA-256, naming
// it; then status exits 1 naming it and a query that would read it fails
// naming it. Restored, verify --deep clears it.
func TestVerifyDeep(t *testing.T) {
	dir := t.TempDir()
	cfgPath, _ := deploymentConfig(t, dir)
	c := []string{"-c", cfgPath}
	const now = "2026-05-01T00:00:00Z"
	mustRun(t, append([]string{"create", "--now", "2026-03-01T00:00:00Z"}, c...)...)
	deliv := filepath.Join(dir, "day.csv")
	os.WriteFile(deliv, []byte(deliveryCSV(1, -1)), 0o644)
	mustRun(t, append([]string{"ingest", "--table", "power", deliv}, c...)...)
	mustRun(t, append([]string{"maintain", "--once", "--now", now}, c...)...)
	if out := mustRun(t, append([]string{"verify", "--deep"}, c...)...); !strings.Contains(out, "power") {
		t.Fatalf("verify --deep of an intact deployment:\n%s", out)
	}

	query := append([]string{"query", "--table", "power", "SELECT count(*) AS n FROM readings WHERE value > 100"}, c...)
	before := mustRun(t, query...)
	var victim string
	filepath.WalkDir(filepath.Join(dir, "wh"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".parquet") && !inRollup(path) && tampertest.Holds(t, path, "value", 1_001_000) {
			victim = path
		}
		return nil
	})
	if victim == "" {
		t.Fatal("no data file holds 1.001")
	}
	orig, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	if n := tampertest.SetDecimal(t, victim, "value", 1_001_000, 1_000_001_000, true); n != 1 {
		t.Fatalf("changed %d values", n)
	}
	if fi, err := os.Stat(victim); err != nil || fi.Size() != int64(len(orig)) {
		t.Fatalf("the altered file: %v, %v; the original has %d bytes", fi, err, len(orig))
	}
	out, code := run(t, append([]string{"verify"}, c...)...)
	t.Logf("verify (sizes and footers) of the altered file:\n%s", out)
	if code != exitPermanent || !strings.Contains(out, filepath.Base(victim)) || !strings.Contains(out, "column value") {
		t.Fatalf("verify of the altered file: exit %d\n%s", code, out)
	}

	out, code = run(t, append([]string{"verify", "--deep"}, c...)...)
	t.Logf("verify --deep:\n%s", out)
	if code != exitPermanent || !strings.Contains(out, filepath.Base(victim)) || !strings.Contains(out, "SHA-256") {
		t.Fatalf("verify --deep of the altered file: exit %d\n%s", code, out)
	}
	out, code = run(t, append([]string{"status", "--now", now}, c...)...)
	t.Logf("status:\n%s", out)
	if code != exitPermanent || !strings.Contains(out, filepath.Base(victim)) {
		t.Fatalf("status with an altered file: exit %d\n%s", code, out)
	}
	out, code = run(t, query...)
	t.Logf("query:\n%s", out)
	if code == 0 || !strings.Contains(out, filepath.Base(victim)) || !strings.Contains(out, "not the file its commit recorded") {
		t.Fatalf("a query reading the altered file: exit %d\n%s", code, out)
	}

	if err := os.WriteFile(victim, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, append([]string{"verify", "--deep"}, c...)...)
	mustRun(t, append([]string{"status", "--now", now}, c...)...)
	if out := mustRun(t, query...); out != before {
		t.Fatalf("the query after the restore:\n%s\nbefore the file was altered:\n%s", out, before)
	}
}

// TestVerifyOrphans: a file under a table's location that nothing
// references (what a refused foreign write leaves) fails verify, named
// with its size, once older than the maintenance loop's safety age (3d by
// default); a younger one is a note. The maintenance loop removes an old
// one, as does orphans --delete, and verify passes again.
func TestVerifyOrphans(t *testing.T) {
	dir, _, c := maintainedDeployment(t)
	const now = maintainedAt
	var loc string // the table's location: the directory holding data/ and metadata/
	filepath.WalkDir(filepath.Join(dir, "wh"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == "metadata" && filepath.Base(filepath.Dir(path)) == "power" && !inRollup(path) {
			loc = filepath.Dir(path)
		}
		return nil
	})
	if loc == "" {
		t.Fatal("no location of power in the warehouse")
	}
	plant := func(rel string, age time.Duration) string {
		t.Helper()
		p := filepath.Join(loc, rel)
		if err := os.WriteFile(p, []byte("left by a refused write"), 0o644); err != nil {
			t.Fatal(err)
		}
		when := time.Now().Add(-age)
		if err := os.Chtimes(p, when, when); err != nil {
			t.Fatal(err)
		}
		return p
	}
	young := plant("data/00000-young.parquet", time.Minute)
	out, code := run(t, append([]string{"verify"}, c...)...)
	if code != 0 || !strings.Contains(out, "note: ") || !strings.Contains(out, filepath.Base(young)) {
		t.Errorf("verify with a young unreferenced file: exit %d\n%s", code, out)
	}

	// An old one in data/: verify fails naming it; the maintenance loop
	// removes it and leaves the young one.
	old := plant("data/00000-refused.parquet", 4*24*time.Hour)
	out, code = run(t, append([]string{"verify"}, c...)...)
	t.Logf("verify with an old unreferenced file:\n%s", out)
	if code != exitPermanent || !strings.Contains(out, filepath.Base(old)+" (23 bytes") || !strings.Contains(out, "nothing references") {
		t.Errorf("verify with an old unreferenced file: exit %d\n%s", code, out)
	}
	mustRun(t, append([]string{"maintain", "--once", "--now", now}, c...)...)
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("the maintenance loop left %s: %v", old, err)
	}
	if _, err := os.Stat(young); err != nil {
		t.Errorf("the maintenance loop took the young file: %v", err)
	}
	mustRun(t, append([]string{"verify"}, c...)...)

	// An old one in metadata/: orphans --delete removes it.
	old = plant("metadata/snap-1-refused.avro", 10*24*time.Hour)
	if out, code := run(t, append([]string{"verify"}, c...)...); code != exitPermanent || !strings.Contains(out, filepath.Base(old)) {
		t.Errorf("verify with an old unreferenced metadata file: exit %d\n%s", code, out)
	}
	mustRun(t, append([]string{"orphans", "--table", "power", "--delete", "--older-than", "72h"}, c...)...)
	if out, code := run(t, append([]string{"verify"}, c...)...); code != 0 || strings.Contains(out, filepath.Base(old)) {
		t.Errorf("verify after orphans --delete: exit %d\n%s", code, out)
	}
}

// inRollup reports whether path lies in a table's daily rollup, which has
// the table's name in the namespace <namespace>_daily.
func inRollup(path string) bool {
	return strings.Contains(filepath.ToSlash(path), "_daily/")
}

// maintainedAt is when maintainedDeployment's maintenance cycle ran.
const maintainedAt = "2026-05-01T00:00:00Z"

// maintainedDeployment creates a deployment in a temporary directory,
// ingests two meters' day into power and runs one maintenance cycle at
// maintainedAt, which archives it; it returns the directory, the
// PostgreSQL URL and the -c arguments.
func maintainedDeployment(t *testing.T) (dir, pgURL string, c []string) {
	t.Helper()
	dir = t.TempDir()
	cfgPath, pgURL := deploymentConfig(t, dir)
	c = []string{"-c", cfgPath}
	mustRun(t, append([]string{"create", "--now", "2026-03-01T00:00:00Z"}, c...)...)
	deliv := filepath.Join(dir, "day.csv")
	if err := os.WriteFile(deliv, []byte(deliveryCSV(2, -1)), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, append([]string{"ingest", "--table", "power", deliv}, c...)...)
	mustRun(t, append([]string{"maintain", "--once", "--now", maintainedAt}, c...)...)
	return dir, pgURL, c
}

package main

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestVerifySwappedManifest follows the probe: two days archived by two
// commits, then the manifest the first archival wrote is copied over the
// one the second wrote. Before this was caught, the second day vanished
// from every answer while status and verify --deep passed. Now a query
// fails naming the manifest, status exits 1 naming it, and verify exits 1
// naming it; restored, everything passes and answers as before.
func TestVerifySwappedManifest(t *testing.T) {
	dir := t.TempDir()
	cfgPath, _ := deploymentConfig(t, dir)
	c := []string{"-c", cfgPath}
	const now = "2026-05-01T00:00:00Z"
	mustRun(t, append([]string{"create", "--now", "2026-03-01T00:00:00Z"}, c...)...)
	day1 := deliveryCSV(2, -1)
	day2 := strings.ReplaceAll(strings.ReplaceAll(day1, "2026-03-02T", "2026-03-03T"), "2026-03-01T", "2026-03-02T")
	for i, csv := range []string{day1, day2} {
		deliv := filepath.Join(dir, []string{"day1.csv", "day2.csv"}[i])
		if err := os.WriteFile(deliv, []byte(csv), 0o644); err != nil {
			t.Fatal(err)
		}
		mustRun(t, append([]string{"ingest", "--table", "power", deliv}, c...)...)
	}
	mustRun(t, append([]string{"maintain", "--once", "--now", now}, c...)...)
	query := append([]string{"query", "--table", "power", `SELECT CAST("from" AS DATE) AS d, count(*) AS n FROM readings GROUP BY 1 ORDER BY 1`}, c...)
	before := mustRun(t, query...)
	if !strings.Contains(before, "2026-03-02") {
		t.Fatalf("fixture: the second day is not there:\n%s", before)
	}

	// The manifests, oldest first: each archival wrote one.
	md := filepath.Join(dir, "wh", "meterstore", "power", "metadata")
	entries, err := os.ReadDir(md)
	if err != nil {
		t.Fatal(err)
	}
	type manifest struct {
		path string
		mod  int64
	}
	var ms []manifest
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".avro") && !strings.HasPrefix(n, "snap-") {
			fi, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			ms = append(ms, manifest{filepath.Join(md, n), fi.ModTime().UnixNano()})
		}
	}
	if len(ms) < 2 {
		t.Fatalf("fixture: %d manifests", len(ms))
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].mod < ms[j].mod })
	victim := ms[len(ms)-1].path
	orig, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	older, err := os.ReadFile(ms[len(ms)-2].path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(victim, older, 0o644); err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(victim)

	out, code := run(t, query...)
	t.Logf("query:\n%s", out)
	if code == 0 || !strings.Contains(out, name) {
		t.Errorf("a query with the manifest swapped: exit %d\n%s", code, out)
	}
	out, code = run(t, append([]string{"status", "--now", now}, c...)...)
	t.Logf("status:\n%s", out)
	if code != exitPermanent || !strings.Contains(out, name) {
		t.Errorf("status with the manifest swapped: exit %d\n%s", code, out)
	}
	out, code = run(t, append([]string{"verify", "--deep"}, c...)...)
	t.Logf("verify --deep:\n%s", out)
	if code != exitPermanent || !strings.Contains(out, name) {
		t.Errorf("verify --deep with the manifest swapped: exit %d\n%s", code, out)
	}

	if err := os.WriteFile(victim, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, append([]string{"verify", "--deep"}, c...)...)
	mustRun(t, append([]string{"status", "--now", now}, c...)...)
	if out := mustRun(t, query...); out != before {
		t.Fatalf("the query after the restore:\n%s\nbefore:\n%s", out, before)
	}
}

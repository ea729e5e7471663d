package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompactCommand archives a month, lands two late corrections below
// the watermark (two small files in one partition, three manifests), and
// compacts: the output says files and manifests before and after, the
// readings and their versions read the same, the table verifies clean,
// and a second run has nothing to do.
func TestCompactCommand(t *testing.T) {
	c, _ := adminDeployment(t)
	mustRun(t, append([]string{"create", "--now", "2026-03-01T00:00:00Z"}, c...)...)
	dir := t.TempDir()
	ingest := func(name, csv string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(csv), 0o644); err != nil {
			t.Fatal(err)
		}
		mustRun(t, append([]string{"ingest", "--table", "power", p}, c...)...)
	}
	ingest("day.csv", deliveryCSV(2, -1))
	mustRun(t, append([]string{"archive", "--now", "2026-05-01T00:00:00Z"}, c...)...)
	// Corrections of the first meter's day under later versions: late.
	for _, v := range []string{"20260310000000", "20260311000000"} {
		ingest(v+".csv", strings.ReplaceAll(deliveryCSV(1, -1), "20260302000000", v))
	}
	query := func(sql string) string {
		t.Helper()
		return strings.TrimSpace(mustRun(t, append([]string{"query", "--table", "power", "--format", "csv", "--now", "2026-05-01T00:00:00Z", sql}, c...)...))
	}
	const versions = `SELECT malo_id, "from", CAST(version AS VARCHAR) AS v, CAST(value AS VARCHAR) AS x FROM readings_versions ORDER BY ALL`
	const resolved = `SELECT malo_id, "from", CAST(version AS VARCHAR) AS v, CAST(value AS VARCHAR) AS x FROM readings ORDER BY ALL`
	beforeV, beforeR := query(versions), query(resolved)
	if n := strings.Count(beforeV, "\n"); n != 192+2*96 {
		t.Fatalf("readings_versions before compaction: %d rows", n)
	}

	out := mustRun(t, append([]string{"compact", "--table", "power"}, c...)...)
	// March is re-marked: its current file and the two corrections become
	// a file of current and one of superseded readings.
	if !strings.Contains(out, "power: data files 3 -> 2, manifests 3 -> 1; 3 files (384 rows,") || !strings.Contains(out, "3 of them with late corrections re-marked") {
		t.Fatalf("compact: %s", out)
	}
	if got := query(versions); got != beforeV {
		t.Errorf("readings_versions changed by the compaction")
	}
	if got := query(resolved); got != beforeR {
		t.Errorf("readings changed by the compaction")
	}
	mustRun(t, append([]string{"verify"}, c...)...)
	if out := mustRun(t, append([]string{"compact"}, c...)...); !strings.Contains(out, "power: nothing to compact: 2 data files, 1 manifests") {
		t.Errorf("compact of every table, again: %s", out)
	}
	if _, code := run(t, append([]string{"compact", "--table", "nosuch"}, c...)...); code != exitPermanent {
		t.Errorf("compact of an undeclared table: exit %d", code)
	}
}

// TestMaintainCompacts: with maintenance.compact_manifests = 2, a cycle
// over a table with three manifests compacts it and says so.
func TestMaintainCompacts(t *testing.T) {
	c, _ := adminDeployment(t)
	cfgPath := c[1]
	text, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "compact_manifests = 16") {
		t.Fatal("the template has no compact_manifests = 16")
	}
	if err := os.WriteFile(cfgPath, []byte(strings.Replace(string(text), "compact_manifests = 16", "compact_manifests = 2", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, append([]string{"create", "--now", "2026-03-01T00:00:00Z"}, c...)...)
	dir := t.TempDir()
	for i, v := range []string{"20260302000000", "20260310000000", "20260311000000"} {
		p := filepath.Join(dir, v+".csv")
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(deliveryCSV(1, -1), "20260302000000", v)), 0o644); err != nil {
			t.Fatal(err)
		}
		mustRun(t, append([]string{"ingest", "--table", "power", p}, c...)...)
		if i == 0 {
			mustRun(t, append([]string{"archive", "--now", "2026-05-01T00:00:00Z"}, c...)...)
		}
	}
	out := mustRun(t, append([]string{"maintain", "--once", "--now", "2026-05-01T00:00:00Z"}, c...)...)
	if !strings.Contains(out, "compacted") || !strings.Contains(out, "files 3->2, manifests 3->1") {
		t.Fatalf("maintain: no compaction of power in\n%s", out)
	}
}

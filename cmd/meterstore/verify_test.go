package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestVerify: verify exits 0 on an intact archived deployment, and 1 when a
// data file of the current snapshot is gone or a partition was detached by
// hand, naming what it found; status does not notice either.
func TestVerify(t *testing.T) {
	dir := t.TempDir()
	cfgPath, pgURL := deploymentConfig(t, dir)
	c := []string{"-c", cfgPath}
	const now = "2026-05-01T00:00:00Z"
	mustRun(t, append([]string{"create", "--now", "2026-03-01T00:00:00Z"}, c...)...)
	deliv := filepath.Join(dir, "day.csv")
	os.WriteFile(deliv, []byte(deliveryCSV(2, -1)), 0o644)
	mustRun(t, append([]string{"ingest", "--table", "power", deliv}, c...)...)
	mustRun(t, append([]string{"maintain", "--once", "--now", now}, c...)...)

	out := mustRun(t, append([]string{"verify"}, c...)...)
	if !strings.Contains(out, "power") {
		t.Errorf("verify of an intact deployment:\n%s", out)
	}

	// A data file of the archived table disappears.
	var files []string
	filepath.WalkDir(filepath.Join(dir, "wh"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".parquet") && strings.Contains(path, "power") {
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
	mustRun(t, append([]string{"status", "--now", now}, c...)...) // status does not look at files
	out, code := run(t, append([]string{"verify"}, c...)...)
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

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/meterstore/meterstore/internal/pgtest"
)

// deploymentConfig writes the template, pointed at a test database and a
// warehouse in dir, and returns its path and the database's URL.
func deploymentConfig(t *testing.T, dir string) (string, string) {
	t.Helper()
	cfgPath := filepath.Join(dir, "meterstore.toml")
	mustRun(t, "init", cfgPath)
	tmpl, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	db := pgtest.NewDB(t)
	text := strings.Replace(string(tmpl), `url = ""`, fmt.Sprintf("url = %q", db), 1)
	text = strings.Replace(text, `data_dir = "meterstore-data"`, fmt.Sprintf("data_dir = %q", dir), 1)
	text = strings.Replace(text, `url = "file://meterstore-data/warehouse"`, fmt.Sprintf("url = %q", "file://"+filepath.Join(dir, "wh")), 1)
	if err := os.WriteFile(cfgPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfgPath, db
}

// TestExitStatusOfBadInput: a missing configuration, a missing input file
// and a directory given as input are permanent (exit 1) with a message
// that names them; a query that meets an archival in flight is worth
// retrying (exit 75).
func TestExitStatusOfBadInput(t *testing.T) {
	dir := t.TempDir()
	cfgPath, db := deploymentConfig(t, dir)
	c := []string{"-c", cfgPath}

	missingCfg := filepath.Join(dir, "missing.toml")
	if out, code := run(t, "status", "-c", missingCfg); code != exitPermanent || !strings.Contains(out, missingCfg) {
		t.Errorf("status with a missing configuration: exit %d, want %d\n%s", code, exitPermanent, out)
	}
	if out, code := run(t, "status", "-c", dir); code != exitPermanent || !strings.Contains(out, dir) {
		t.Errorf("status with a directory as configuration: exit %d, want %d\n%s", code, exitPermanent, out)
	}

	mustRun(t, append([]string{"create", "--now", "2026-03-01T00:00:00Z"}, c...)...)
	missing := filepath.Join(dir, "missing.csv")
	if out, code := run(t, append([]string{"ingest", "--table", "power", missing}, c...)...); code != exitPermanent || !strings.Contains(out, missing) {
		t.Errorf("ingest of a missing file: exit %d, want %d\n%s", code, exitPermanent, out)
	}
	sub := filepath.Join(dir, "deliveries.csv")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, code := run(t, append([]string{"ingest", "--table", "power", sub}, c...)...); code != exitPermanent || !strings.Contains(out, "directory") {
		t.Errorf("ingest of a directory: exit %d, want %d\n%s", code, exitPermanent, out)
	}

	// An archival that detached a partition and has not committed yet:
	// its rows are in neither tier's view, and the query says so.
	deliv := filepath.Join(dir, "day.csv")
	os.WriteFile(deliv, []byte(deliveryCSV(1, -1)), 0o644)
	mustRun(t, append([]string{"ingest", "--table", "power", deliv}, c...)...)
	conn, err := pgx.Connect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(t.Context()))
	var part string
	if err := conn.QueryRow(t.Context(), `SELECT c.relname FROM pg_inherits i
		JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
		JOIN pg_namespace n ON n.oid = p.relnamespace
		WHERE n.nspname = 'meterstore' AND p.relname = 'power' ORDER BY c.relname LIMIT 1`).Scan(&part); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), fmt.Sprintf(`ALTER TABLE meterstore.power DETACH PARTITION meterstore.%q`, part)); err != nil {
		t.Fatal(err)
	}
	out, code := run(t, append([]string{"query", "--table", "power", "--now", "2026-03-02T00:00:00Z",
		`SELECT count(*) FROM readings`}, c...)...)
	if code != exitRetryable || !strings.Contains(out, "in flight") {
		t.Errorf("query over rows in flight: exit %d, want %d\n%s", code, exitRetryable, out)
	}
}

// TestNowIsSaneCommandLine: a --now far past the wall clock or before
// 1970 is refused, exit 1, with a message naming the bound, by every
// command that takes one, and moves nothing: `maintain --once --now
// 9999-12-30T00:00:00Z` once archived a window up to 9999-11-15, and
// --now 0001-01-01T00:00:00Z attached year-0001 partitions.
func TestNowIsSaneCommandLine(t *testing.T) {
	dir := t.TempDir()
	cfgPath, _ := deploymentConfig(t, dir)
	c := []string{"-c", cfgPath}
	mustRun(t, append([]string{"create", "--now", "2026-03-01T00:00:00Z"}, c...)...)
	deliv := filepath.Join(dir, "day.csv")
	os.WriteFile(deliv, []byte(deliveryCSV(1, -1)), 0o644)
	mustRun(t, append([]string{"ingest", "--table", "power", deliv}, c...)...)
	for _, tc := range []struct{ now, bound string }{
		{"9999-12-30T00:00:00Z", "max_clock_skew 1d"},
		{"0001-01-01T00:00:00Z", "before 1970-01-01"},
	} {
		for _, cmd := range []string{"maintain", "archive", "create", "status", "query"} {
			args := []string{cmd, "--now", tc.now}
			switch cmd {
			case "maintain":
				args = append(args, "--once")
			case "query":
				args = append(args, "--table", "power", "SELECT count(*) FROM readings")
			}
			out, code := run(t, append(args, c...)...)
			if code != exitPermanent || !strings.Contains(out, tc.bound) {
				t.Errorf("%s --now %s: exit %d, want %d naming %q\n%s", cmd, tc.now, code, exitPermanent, tc.bound, out)
			}
		}
	}
	if out := mustRun(t, append([]string{"snapshots", "--table", "power"}, c...)...); strings.Contains(out, "9999") {
		t.Errorf("a refused now moved the watermark:\n%s", out)
	}
	if out := mustRun(t, append([]string{"query", "--table", "power", "--format", "csv", "--now", "2026-03-02T00:00:00Z",
		`SELECT count(*) AS n FROM readings`}, c...)...); strings.TrimSpace(out) != "n\n96" {
		t.Errorf("after the refused nows: %q", out)
	}
}

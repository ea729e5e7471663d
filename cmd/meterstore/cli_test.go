package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/internal/parquetzstd"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/metering"
)

// TestMain runs the tests with the zstd codec main registers, so that the
// files the tests write, and the foreign engines read, are the command's.
func TestMain(m *testing.M) {
	if err := parquetzstd.Register(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pgtest.Main(m)
}

// run executes the command line in this process and returns its output
// and exit status.
func run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(t.Context())
	if err != nil {
		fmt.Fprintln(&out, "error:", err)
	}
	return out.String(), exitCode(err)
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, code := run(t, args...)
	if code != 0 {
		t.Fatalf("meterstore %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// deliveryCSV returns a day of quarter hours of meters market locations,
// with line bad (counted from the header, 1) given an invalid MaLo.
func deliveryCSV(meters, bad int) string {
	var b strings.Builder
	b.WriteString("malo_id,obis_code,from,to,value,unit,quality,resolution,version,version_scope\n")
	line := 1
	for i := range meters {
		m, _ := metering.MaLoFromPrefix(fmt.Sprintf("%010d", 2_000_000_000+i))
		for q := range 96 {
			line++
			id := m.String()
			if line == bad {
				id = "12345678901"
			}
			from := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(q) * 15 * time.Minute)
			fmt.Fprintf(&b, "%s,1-1:1.29.0,%s,%s,%d.%03d,kWh,220,PT15M,20260302000000,9900000000003:2026-03\n",
				id, from.Format(time.RFC3339), from.Add(15*time.Minute).Format(time.RFC3339), q%7, q)
		}
	}
	return b.String()
}

// TestCommandLine drives a deployment through the command line: init,
// check, create, ingest with a bad line, query, archive, status, maintain,
// snapshots, purge, and the exit statuses.
func TestCommandLine(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "meterstore.toml")
	mustRun(t, "init", cfgPath)
	if _, code := run(t, "init", cfgPath); code != exitPermanent {
		t.Errorf("init over an existing file: exit %d", code)
	}
	// Point the template at the test database.
	tmpl, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(tmpl), `url = ""`, fmt.Sprintf("url = %q", pgtest.NewDB(t)), 1)
	text = strings.Replace(text, `data_dir = "meterstore-data"`, fmt.Sprintf("data_dir = %q", dir), 1)
	text = strings.Replace(text, `url = "file://meterstore-data/warehouse"`, fmt.Sprintf("url = %q", "file://"+filepath.Join(dir, "wh")), 1)
	if err := os.WriteFile(cfgPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c := []string{"-c", cfgPath}
	mustRun(t, append([]string{"check"}, c...)...)

	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte(strings.Replace(text, `settlement_lag = "45d"`, `settlement_lag = 45`, 1)), 0o644)
	if out, code := run(t, "check", "-c", bad); code != exitPermanent || !strings.Contains(out, "archive.settlement_lag") {
		t.Errorf("check of a unitless duration: exit %d\n%s", code, out)
	}
	// What a deployment cannot do or must not touch, each refused by name.
	for _, tc := range []struct{ old, new, key string }{
		{`settlement_lag = "45d"`, `settlement_lag = "100000d"`, "archive.settlement_lag"},
		{fmt.Sprintf("data_dir = %q", dir), `data_dir = "/"`, "postgres.data_dir"},
		{`schema = "meterstore"`, `schema = "pg_catalog"`, "postgres.schema"},
		{`cache_dir = ""`, `cache_dir = "/etc"`, "query.cache_dir"},
		{`shutdown_timeout = "30s"`, `shutdown_timeout = "1000000h"`, "server.shutdown_timeout"},
		{`reader_grace = "1h"`, `reader_grace = "100000d"`, "archive.reader_grace: 100000d: want at most 7d"},
		{`ddl_lock_timeout = "3s"`, `ddl_lock_timeout = "100000d"`, "hot.ddl_lock_timeout: 100000d: want at most 10m"},
	} {
		os.WriteFile(bad, []byte(strings.Replace(text, tc.old, tc.new, 1)), 0o644)
		if out, code := run(t, "check", "-c", bad); code != exitPermanent || !strings.Contains(out, tc.key) {
			t.Errorf("check of %s: exit %d\n%s", tc.new, code, out)
		}
	}

	mustRun(t, append([]string{"create", "--now", "2026-03-01T00:00:00Z"}, c...)...)

	// A delivery with one bad line writes nothing and names the line.
	deliv := filepath.Join(dir, "day.csv")
	os.WriteFile(deliv, []byte(deliveryCSV(2, 50)), 0o644)
	out, code := run(t, append([]string{"ingest", "--table", "power", deliv}, c...)...)
	if code != exitPermanent || !strings.Contains(out, "line 50") {
		t.Fatalf("ingest with a bad line: exit %d\n%s", code, out)
	}
	count := func() string {
		t.Helper()
		out := mustRun(t, append([]string{"query", "--table", "power", "--format", "csv", "--now", "2026-03-02T00:00:00Z",
			`SELECT count(*) AS n FROM readings`}, c...)...)
		return strings.TrimSpace(out)
	}
	if got := count(); got != "n\n0" {
		t.Fatalf("after the refused batch: %q", got)
	}
	// A reading restated within a file is named by its line, and so is
	// the line it restates: not by their indexes in the batch.
	day := strings.SplitAfter(deliveryCSV(1, -1), "\n")
	restated := filepath.Join(dir, "restated.csv")
	os.WriteFile(restated, []byte(day[0]+day[1]+day[2]+strings.Replace(day[1], ",0.000,", ",9.000,", 1)), 0o644)
	out, code = run(t, append([]string{"ingest", "--table", "power", restated}, c...)...)
	if code != exitPermanent || !strings.Contains(out, "batch of lines 2-4 not written") ||
		!strings.Contains(out, "line 4: restates line 2 under version") {
		t.Fatalf("ingest with a restated reading: exit %d\n%s", code, out)
	}
	os.WriteFile(deliv, []byte(deliveryCSV(2, -1)), 0o644)
	report := filepath.Join(dir, "report.csv")
	out = mustRun(t, append([]string{"ingest", "--table", "power", "--report", report, deliv}, c...)...)
	if !strings.Contains(out, "192 inserted") {
		t.Errorf("ingest: %s", out)
	}
	mustRun(t, append([]string{"ingest", "--table", "power", "--report", report, deliv}, c...)...)
	rep, _ := os.ReadFile(report)
	if n := strings.Count(string(rep), ",present\n"); n != 192 {
		t.Errorf("redelivery reported %d rows present, want 192", n)
	}
	if got := count(); got != "n\n192" {
		t.Fatalf("after ingest: %q", got)
	}
	// --param binds placeholders; no table is the default.
	out = mustRun(t, append([]string{"query", "--format", "csv", "--now", "2026-03-02T00:00:00Z",
		"--param", "2026-03-01T12:00:00Z", "--param", "20000000008",
		`SELECT count(*) AS n FROM power.readings WHERE "from" >= $1 AND malo_id = $2`}, c...)...)
	if strings.TrimSpace(out) != "n\n48" {
		t.Errorf("query --param: %q", out)
	}
	// Nothing is archived yet: a historical read sees no row, an
	// operational one sees them all.
	for flag, want := range map[string]string{"--historical": "n\n0", "--operational": "n\n192"} {
		out, code := run(t, append([]string{"query", "--format", "csv", "--now", "2026-03-02T00:00:00Z", flag,
			`SELECT count(*) AS n FROM power.readings`}, c...)...)
		if code != 0 || strings.TrimSpace(out) != want {
			t.Errorf("query %s: exit %d\n%s", flag, code, out)
		}
	}
	out = mustRun(t, append([]string{"query", "--table", "power", "--format", "json", "--now", "2026-03-02T00:00:00Z",
		`SELECT 1 AS a, 2 AS a, UUID '0190a5f4-1234-7abc-8def-0123456789ab' AS u, 'infinity'::TIMESTAMPTZ AS t, DATE '2026-04-10' AS d`}, c...)...)
	if want := `{"a":1,"a_2":2,"u":"0190a5f4-1234-7abc-8def-0123456789ab","t":"infinity","d":"2026-04-10"}` + "\n"; out != want {
		t.Errorf("query --format json: got %q, want %q", out, want)
	}

	if out, code := run(t, append([]string{"query", "--table", "power", "DELETE FROM readings"}, c...)...); code != exitPermanent {
		t.Errorf("a DELETE was not refused: exit %d\n%s", code, out)
	}

	// Archive: the default settlement lag is 45 days.
	out = mustRun(t, append([]string{"archive", "--now", "2026-05-01T00:00:00Z"}, c...)...)
	if !strings.Contains(out, "power: archived") {
		t.Errorf("archive: %s", out)
	}
	if got := count(); got != "n\n192" {
		t.Fatalf("after archival: %q", got)
	}
	// Nothing is ahead of May: unhealthy, exit 1; a maintenance cycle
	// creates the partitions, and the deployment is healthy again.
	if out, code := run(t, append([]string{"status", "--now", "2026-05-01T00:00:00Z"}, c...)...); code != exitPermanent {
		t.Errorf("status without partitions ahead: exit %d\n%s", code, out)
	}
	mustRun(t, append([]string{"maintain", "--once", "--now", "2026-05-01T00:00:00Z"}, c...)...)
	mustRun(t, append([]string{"status", "--now", "2026-05-01T00:00:00Z"}, c...)...)
	if out := mustRun(t, append([]string{"snapshots", "--table", "power"}, c...)...); !strings.Contains(out, "2026-03-17T00:00:00Z") {
		t.Errorf("snapshots: no snapshot with W 2026-03-17 (May 1 minus 45 days)\n%s", out)
	}

	if _, code := run(t, append([]string{"purge", "--table", "gas", "--confirm", "power"}, c...)...); code != exitPermanent {
		t.Errorf("purge with a wrong confirmation: exit %d", code)
	}
	if out := mustRun(t, append([]string{"purge", "--table", "gas", "--confirm", "gas"}, c...)...); !strings.Contains(out, "purged gas") {
		t.Errorf("purge: %s", out)
	}

	// An unreachable server is worth retrying: exit 75.
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, `url = "postgres`) {
			lines[i] = `url = "postgres://postgres@127.0.0.1:1/none?connect_timeout=2"`
		}
	}
	down := strings.Join(lines, "\n")
	os.WriteFile(bad, []byte(down), 0o644)
	if out, code := run(t, "status", "-c", bad); code != exitRetryable {
		t.Errorf("status against an unreachable server: exit %d\n%s", code, out)
	}
}

// TestIngestBatchBounds: a --batch of zero, negative or past the maximum is
// a usage error, exit 1, before anything is allocated or opened.
func TestIngestBatchBounds(t *testing.T) {
	for _, n := range []string{"0", "-5", "1000001", "1000000000", "9000000000000000000"} {
		out, code := run(t, "ingest", "-c", filepath.Join(t.TempDir(), "none.toml"), "--table", "power", "--batch", n, "day.csv")
		if code != exitPermanent || !strings.Contains(out, "--batch "+n+": want 1 to 1000000") {
			t.Errorf("--batch %s: exit %d\n%s", n, code, out)
		}
	}
}

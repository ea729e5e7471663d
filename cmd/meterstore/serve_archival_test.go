package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestServeLogsArchival: serve's maintenance loop archives a day past the
// settlement lag that no command archived, and its log says so, a line
// per window committed with the table, the window, its rows and the
// watermark W moved to, the last of which is W as query then reads it.
func TestServeLogsArchival(t *testing.T) {
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	cfgPath, _ := deploymentConfig(t, dir)
	text, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(text), `listen = "127.0.0.1:8080"`, `listen = "127.0.0.1:0"`, 1)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	c := []string{"-c", cfgPath}
	mustRun(t, append([]string{"create"}, c...)...)
	// A day past the settlement lag (45 days): the first cycle archives it.
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -60)
	csv := strings.ReplaceAll(deliveryCSV(2, -1), "2026-03-02T", day.AddDate(0, 0, 1).Format("2006-01-02T"))
	csv = strings.ReplaceAll(csv, "2026-03-01T", day.Format("2006-01-02T"))
	path := filepath.Join(dir, "day.csv")
	if err := os.WriteFile(path, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, append([]string{"ingest", "--table", "power", path}, c...)...)

	p := startServe(t, bin, cfgPath)
	p.waitLog("msg=archived table=power", 2*time.Minute)
	if code := p.terminate(time.Minute); code != 0 {
		t.Fatalf("after SIGTERM: exit %d\n%s", code, p.stderr.String())
	}
	log := p.stderr.String()
	line := regexp.MustCompile(`level=INFO msg=archived table=power from=(\S+) to=(\S+) rows=(\d+) watermark=(\S+) recovered=false`)
	var rows, last string
	for _, m := range line.FindAllStringSubmatch(log, -1) {
		if m[2] != m[4] {
			t.Errorf("window to %s, watermark %s: W moves to the end of the window committed", m[2], m[4])
		}
		if m[1] <= day.Format(time.RFC3339) && day.Format(time.RFC3339) < m[2] {
			rows = m[3]
		}
		last = m[4]
	}
	if rows != "192" {
		t.Fatalf("no archival of the day's 192 readings in serve's log:\n%s", log)
	}
	out := mustRun(t, append([]string{"query", "--format", "csv", `SELECT strftime(watermark AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%SZ') AS w FROM system.tables WHERE "table" = 'power'`}, c...)...)
	if strings.TrimSpace(out) != "w\n"+last {
		t.Errorf("the log's last watermark %s is not system.tables':\n%s", last, out)
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runIn executes the command line in this process with stdin as its
// standard input.
func runIn(t *testing.T, stdin string, args ...string) (string, int) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err := root.ExecuteContext(t.Context())
	if err != nil {
		fmt.Fprintln(&out, "error:", err)
	}
	return out.String(), exitCode(err)
}

// TestInitConfigFlag: init takes the file as -c, as every other command
// does, keeps an existing file, and refuses two different names.
func TestInitConfigFlag(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "deployment.toml")
	if out := mustRun(t, "init", "-c", path); !strings.Contains(out, "wrote "+path) {
		t.Errorf("init -c: %s", out)
	}
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), "[postgres]") {
		t.Fatalf("init -c wrote %d bytes, %v", len(b), err)
	}
	if err := os.WriteFile(path, []byte("# mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := run(t, "init", "--config", path); code != exitPermanent || !strings.Contains(out, "exists") {
		t.Errorf("init -c over an existing file: exit %d\n%s", code, out)
	}
	if b, _ := os.ReadFile(path); string(b) != "# mine\n" {
		t.Errorf("init -c overwrote an existing file: %q", b)
	}
	other := filepath.Join(dir, "other.toml")
	if out, code := run(t, "init", other, "-c", path); code != exitPermanent || !strings.Contains(out, "named twice") {
		t.Errorf("init FILE -c OTHER: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(other); err == nil {
		t.Error("init FILE -c OTHER wrote FILE")
	}
}

// TestStatementInputStatusJSONExplain drives, on one deployment, what a
// user reaches for beside query: the statement from standard input or a
// file, status as JSON, explain before and after an archival, and the
// completion of --table and --format.
func TestStatementInputStatusJSONExplain(t *testing.T) {
	dir := t.TempDir()
	cfgPath, _ := deploymentConfig(t, dir)
	c := []string{"-c", cfgPath}
	mustRun(t, append([]string{"create", "--now", "2026-03-01T00:00:00Z"}, c...)...)
	deliv := filepath.Join(dir, "day.csv")
	os.WriteFile(deliv, []byte(deliveryCSV(2, -1)), 0o644)
	mustRun(t, append([]string{"ingest", "--table", "power", deliv}, c...)...)

	// The statement from standard input and from a file.
	q := []string{"query", "--table", "power", "--format", "csv", "--now", "2026-03-02T00:00:00Z"}
	sql := "SELECT count(*) AS n\nFROM readings\n"
	if out, code := runIn(t, sql, append(append(q, "-"), c...)...); code != 0 || strings.TrimSpace(out) != "n\n192" {
		t.Errorf("query -: exit %d\n%s", code, out)
	}
	file := filepath.Join(dir, "count.sql")
	os.WriteFile(file, []byte(sql), 0o644)
	if out, code := run(t, append(append(q, "@"+file), c...)...); code != 0 || strings.TrimSpace(out) != "n\n192" {
		t.Errorf("query @file: exit %d\n%s", code, out)
	}
	if out, code := runIn(t, " \n", append(append(q, "-"), c...)...); code != exitPermanent || !strings.Contains(out, "no SQL statement in standard input") {
		t.Errorf("query - with nothing on standard input: exit %d\n%s", code, out)
	}
	missing := filepath.Join(dir, "missing.sql")
	if out, code := run(t, append(append(q, "@"+missing), c...)...); code != exitPermanent || !strings.Contains(out, missing) {
		t.Errorf("query @missing: exit %d\n%s", code, out)
	}

	// status --format json is the body of GET /v1/status.
	out, code := run(t, append([]string{"status", "--format", "json", "--now", "2026-03-01T12:00:00Z"}, c...)...)
	var body struct {
		Now     string `json:"now"`
		Healthy *bool  `json:"healthy"`
		Tables  []struct {
			Table           string  `json:"table"`
			Watermark       *string `json:"watermark"`
			HotPartitions   *int64  `json:"hot_partitions"`
			PartitionsAhead *int64  `json:"partitions_ahead"`
			Healthy         *bool   `json:"healthy"`
		} `json:"tables"`
	}
	if err := json.Unmarshal([]byte(out), &body); err != nil || body.Healthy == nil || len(body.Tables) != 2 {
		t.Fatalf("status --format json: exit %d, %v\n%s", code, err, out)
	}
	if code != 0 || !*body.Healthy || body.Now != "2026-03-01T12:00:00Z" || body.Tables[0].Table != "power" ||
		body.Tables[0].Watermark != nil || body.Tables[0].HotPartitions == nil || *body.Tables[0].HotPartitions < 1 {
		t.Errorf("status --format json: exit %d\n%s", code, out)
	}
	if out, code := run(t, append([]string{"status", "--format", "yaml"}, c...)...); code != exitPermanent || !strings.Contains(out, "want table or json") {
		t.Errorf("status --format yaml: exit %d\n%s", code, out)
	}

	// explain before any archival: the hot tier alone, its partition of
	// March 1.
	ex := []string{"explain", "--table", "power"}
	day := `SELECT count(*) FROM readings WHERE "from" >= '2026-03-01' AND "from" < '2026-03-02' AND malo_id IN ('20000000008', '20000000016')`
	out = mustRun(t, append(append(ex, day), c...)...)
	for _, want := range []string{"power: from [2026-03-01T00:00:00Z, 2026-03-02T00:00:00Z)",
		"market locations: 20000000008, 20000000016", "watermark: none", "cold: not read", "hot: 1 attached partitions, power_p20260301"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain before archival: no %q\n%s", want, out)
		}
	}
	// Without --table, as query takes it: the statement names its table.
	out = mustRun(t, append([]string{"explain", strings.Replace(day, "FROM readings", "FROM power.readings", 1)}, c...)...)
	if !strings.Contains(out, "power: from [2026-03-01T00:00:00Z, 2026-03-02T00:00:00Z)") || !strings.Contains(out, "hot: 1 attached partitions, power_p20260301") {
		t.Errorf("explain without --table:\n%s", out)
	}
	if out, code := run(t, append(append(ex, "DELETE FROM readings"), c...)...); code != exitPermanent {
		t.Errorf("explain DELETE: exit %d\n%s", code, out)
	}
	mustRun(t, append([]string{"archive", "--now", "2026-05-01T00:00:00Z"}, c...)...)
	out = mustRun(t, append(append(ex, "--files", day), c...)...)
	for _, want := range []string{"watermark 2026-03-17T00:00:00Z", "cold: snapshot ", "1 data files", ".parquet", "hot: not read"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain after archival: no %q\n%s", want, out)
		}
	}
	out = mustRun(t, append(append(ex, `SELECT * FROM readings p JOIN gas.readings g USING (malo_id) WHERE p."from" >= '2026-04-01'`), c...)...)
	for _, want := range []string{"power: from [2026-04-01T00:00:00Z, infinity)", "cold: not read", "gas: from [-infinity, infinity)"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain of two tables: no %q\n%s", want, out)
		}
	}

	// Completion: --table from the configuration, --format by command.
	out = mustRun(t, "__complete", "query", "-c", cfgPath, "--table", "")
	if !strings.Contains(out, "power\ngas\n") {
		t.Errorf("completion of --table:\n%s", out)
	}
	out = mustRun(t, "__complete", "status", "--format", "")
	if !strings.Contains(out, "table\njson\n") {
		t.Errorf("completion of status --format:\n%s", out)
	}
}

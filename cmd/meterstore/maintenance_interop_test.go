package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
)

// TestMaintenanceInterop ages a table the way a decade does, through the
// commands an operator runs: archivals, late corrections below the
// watermark, expiry of old snapshots, a column added to the declaration,
// compaction. PyIceberg and DuckDB's iceberg reader, opening the table
// directory as engines without a catalog do, must then agree row for row
// with MeterStore's readings_versions, and resolve to its readings, by the
// superseded marks alone since the compaction decided them. Python with pyiceberg, pyarrow and duckdb is
// required (.ci/run installs them); without them the test fails in CI and
// is skipped elsewhere.
func TestMaintenanceInterop(t *testing.T) {
	if err := exec.Command("python3", "-c", "import pyiceberg, pyarrow, duckdb").Run(); err != nil {
		const msg = "python3 with pyiceberg, pyarrow and duckdb is required: see .ci/run"
		if os.Getenv("CI") != "" {
			t.Fatal(msg, err)
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	cfgPath, _ := deploymentConfig(t, dir)
	setConfig(t, cfgPath, map[string]string{
		`min_snapshots = 100`:          `min_snapshots = 1`,
		`snapshot_retention = "3653d"`: `snapshot_retention = "1h"`,
	})
	c := []string{"-c", cfgPath}
	mustRun(t, append([]string{"create", "--now", "2026-03-01T00:00:00Z"}, c...)...)

	ingest := func(name, csv string) {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(csv), 0o644); err != nil {
			t.Fatal(err)
		}
		mustRun(t, append([]string{"ingest", "--table", "power", path}, c...)...)
	}
	ingest("days.csv", daysCSV(3, 4))
	if out := mustRun(t, append([]string{"archive", "--now", "2026-05-01T00:00:00Z"}, c...)...); !strings.Contains(out, "power: archived") {
		t.Fatalf("archive: %s", out)
	}
	// Late corrections, below the watermark: each delivery is a commit
	// of its own with files the archival did not decide.
	ingest("late1.csv", versionCSV(0, 0, "20260401000000", 7))
	ingest("late2.csv", versionCSV(1, 2, "20260402000000", 9))
	ingest("late3.csv", versionCSV(0, 0, "20260403000000", 11))
	// More archivals, each a snapshot.
	for day := range 3 {
		from := time.Date(2026, 4, 1+day, 0, 0, 0, 0, time.UTC)
		ingest(fmt.Sprintf("april%d.csv", day), dayCSV(3, from, "20260502000000"))
	}
	if out := mustRun(t, append([]string{"archive", "--now", "2026-06-01T00:00:00Z"}, c...)...); !strings.Contains(out, "power: archived") {
		t.Fatalf("archive: %s", out)
	}
	// Snapshots carry the wall clock: half a day on, every one but the
	// newest is older than the hour kept.
	later := time.Now().Add(12 * time.Hour).UTC().Format(time.RFC3339)
	if out := mustRun(t, append([]string{"expire", "--table", "power", "--now", later}, c...)...); !regexp.MustCompile(`power: [1-9][0-9]* snapshots expired, 1 kept`).MatchString(out) {
		t.Fatalf("expire: %s", out)
	}

	// A column added to the declaration: both tiers take it; the rows
	// before it read NULL.
	setConfig(t, cfgPath, map[string]string{"\n[[table]]\nname = \"gas\"": "[[table.column]]\nname = \"tariff\"\nvalues = [\"HT\", \"NT\"]\n\n[[table]]\nname = \"gas\""})
	for day := range 2 {
		from := time.Date(2026, 4, 20+day, 0, 0, 0, 0, time.UTC)
		ingest(fmt.Sprintf("tariff%d.csv", day), withTariffs(dayCSV(3, from, "20260502000000")))
	}
	if out := mustRun(t, append([]string{"archive", "--now", "2026-06-08T00:00:00Z"}, c...)...); !strings.Contains(out, "power: archived") {
		t.Fatalf("archive: %s", out)
	}
	ingest("late4.csv", withTariffs(versionCSV(2, 0, "20260404000000", 13)))
	// Compacted: the small files of each month merged, the months with
	// late corrections rewritten with their marks decided again, one
	// manifest; rows and watermark unchanged.
	out := mustRun(t, append([]string{"compact", "--table", "power"}, c...)...)
	t.Logf("compact: %s", out)
	if !strings.Contains(out, "-> 1") {
		t.Fatalf("compact did not merge the manifests into one: %s", out)
	}
	// Expired again: the snapshots that still referenced the files the
	// compaction replaced are gone.
	if out := mustRun(t, append([]string{"expire", "--table", "power", "--now", later}, c...)...); !regexp.MustCompile(`power: [1-9][0-9]* snapshots expired, 1 kept`).MatchString(out) {
		t.Fatalf("expire after the compaction: %s", out)
	}

	query := func(sql string) []map[string]any {
		t.Helper()
		out := mustRun(t, append([]string{"query", "--table", "power", "--format", "json", sql}, c...)...)
		var rows []map[string]any
		for _, l := range strings.Split(out, "\n") {
			if !strings.HasPrefix(l, "{") {
				continue
			}
			var row map[string]any
			if err := json.Unmarshal([]byte(l), &row); err != nil {
				t.Fatalf("query output %q: %v", l, err)
			}
			rows = append(rows, row)
		}
		return rows
	}
	const cols = `malo_id, obis_code, strftime("from" AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S') AS "from", CAST(version AS VARCHAR) AS version, CAST(value AS VARCHAR) AS value, tariff`
	versions := query(`SELECT ` + cols + ` FROM readings_versions`)
	readings := query(`SELECT ` + cols + ` FROM readings`)
	if n, m := 3*96*9+96*4, 3*96*9; len(versions) != n || len(readings) != m {
		t.Fatalf("MeterStore holds %d versions and %d readings, want %d and %d", len(versions), len(readings), n, m)
	}
	tariffs := 0
	for _, v := range versions {
		if v["tariff"] != nil {
			tariffs++
		}
	}
	if tariffs != 3*96*2+96 {
		t.Fatalf("%d versions carry a tariff, want %d", tariffs, 3*96*2+96)
	}
	w := query(`SELECT strftime(watermark AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%SZ') AS w FROM system.tables WHERE "table" = 'power'`)
	if len(w) != 1 {
		t.Fatalf("system.tables: %v", w)
	}
	spec := map[string]any{
		"table_dir": filepath.Join(dir, "wh", "meterstore", "power"),
		"versions":  versions,
		"readings":  readings,
		"watermark": w[0]["w"],
		"extra":     []string{"tariff"},
		"columns":   []string{"tariff"},
		"decided":   true,
	}
	if out, err := readersAgree(t, dir, spec); err != nil {
		t.Errorf("maintenance_interop.py: %v\n%s", err, out)
	}
	// The teeth: one version fewer on MeterStore's side, and the readers
	// must disagree.
	spec["versions"] = versions[1:]
	if out, err := readersAgree(t, dir, spec); err == nil {
		t.Errorf("maintenance_interop.py agreed with a version missing:\n%s", out)
	}
}

// readersAgree runs testdata/maintenance_interop.py on spec.
func readersAgree(t *testing.T, dir string, spec map[string]any) (string, error) {
	t.Helper()
	specPath := filepath.Join(dir, "spec.json")
	data, _ := json.Marshal(spec)
	if err := os.WriteFile(specPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), "python3", "testdata/maintenance_interop.py", specPath).CombinedOutput()
	t.Logf("maintenance_interop.py:\n%s", out)
	return string(out), err
}

// setConfig replaces each key's line of the configuration at path with its
// value, failing t if a line is missing.
func setConfig(t *testing.T, path string, lines map[string]string) {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(text)
	for old, repl := range lines {
		if !strings.Contains(s, old) {
			t.Fatalf("the configuration has no line %q", old)
		}
		s = strings.Replace(s, old, repl, 1)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// versionCSV returns a new version of meter's quarter hours on March
// 1+day, each value raised by add.
func versionCSV(meter, day int, version string, add int) string {
	var b strings.Builder
	b.WriteString("malo_id,obis_code,from,to,value,unit,quality,resolution,version,version_scope\n")
	m, _ := metering.MaLoFromPrefix(fmt.Sprintf("%010d", 2_000_000_000+meter))
	for q := range 96 {
		from := time.Date(2026, 3, 1+day, 0, 0, 0, 0, time.UTC).Add(time.Duration(q) * 15 * time.Minute)
		fmt.Fprintf(&b, "%s,1-1:1.29.0,%s,%s,%d.%03d,kWh,220,PT15M,%s,9900000000003:2026-03\n",
			m.String(), from.Format(time.RFC3339), from.Add(15*time.Minute).Format(time.RFC3339), day+1+add, q, version)
	}
	return b.String()
}

// withTariffs adds a tariff column to a delivery: HT for even quarter
// hours, NT for odd ones.
func withTariffs(csv string) string {
	lines := strings.Split(strings.TrimSuffix(csv, "\n"), "\n")
	lines[0] += ",tariff"
	for i := 1; i < len(lines); i++ {
		lines[i] += map[bool]string{true: ",HT", false: ",NT"}[i%2 == 0]
	}
	return strings.Join(lines, "\n") + "\n"
}

// dayCSV returns the quarter hours of meters market locations on the day
// from, of one version.
func dayCSV(meters int, day time.Time, version string) string {
	var b strings.Builder
	b.WriteString("malo_id,obis_code,from,to,value,unit,quality,resolution,version,version_scope\n")
	for i := range meters {
		m, _ := metering.MaLoFromPrefix(fmt.Sprintf("%010d", 2_000_000_000+i))
		for q := range 96 {
			from := day.Add(time.Duration(q) * 15 * time.Minute)
			fmt.Fprintf(&b, "%s,1-1:1.29.0,%s,%s,%d.%03d,kWh,220,PT15M,%s,9900000000003:%s\n",
				m.String(), from.Format(time.RFC3339), from.Add(15*time.Minute).Format(time.RFC3339), day.Day(), q, version, day.Format("2006-01"))
		}
	}
	return b.String()
}

package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDailyViewEngines reads the daily rollup of power (the table
// meterstore_daily.power) and its view power_daily through the REST
// catalog of a serve, in PyIceberg (the table, resolved by its highest
// rollup_version as the view says, and the view's listing and metadata)
// and in DuckDB (the view's duckdb SQL over the attached table): both
// equal MeterStore's relation daily for the days the rollup holds, those
// ending at or before W, on TestServeSpark's fixture (late corrections
// below W included). It needs PyIceberg and DuckDB's Python package.
func TestDailyViewEngines(t *testing.T) {
	if err := exec.Command("python3", "-c", "import duckdb, duckdb_ext, pyiceberg").Run(); err != nil {
		requireTool(t, "PyIceberg, DuckDB's Python package and the duckdb-ext wheels are required: .ci/run installs them", err)
	}
	f := newArchivedFixture(t, 2, catalogDays, trinoCatalog)
	d, c := f.d, f.c
	want := msQuery(t, c, nil, `SELECT malo_id, CAST(balancing_day AS VARCHAR), sparte, resolution, unit, CAST(expected AS VARCHAR),
		CAST(present AS VARCHAR), CAST(on_grid AS VARCHAR), CAST(value_sum AS VARCHAR), CAST(max_version AS VARCHAR)
		FROM daily WHERE "to" <= TIMESTAMPTZ '`+f.w+`'`)
	if len(want) == 0 {
		t.Fatalf("daily has no day ending at or before W %s", f.w)
	}
	p, base := startTLSServe(t, d.bin, d.cfgPath)
	spec, _ := json.Marshal(map[string]any{
		"catalog_uri": base + "/iceberg",
		"client_id":   "lake",
		"secret":      d.lakeTok,
		"namespace":   "meterstore_daily",
		"table":       "power",
	})
	specPath := filepath.Join(d.dir, "daily.json")
	if err := os.WriteFile(specPath, spec, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "python3", "testdata/serve_daily_view.py", specPath)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("serve_daily_view.py: %v\n%s\n%s", err, out, stderr)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var got map[string][][]string
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil {
		t.Fatalf("serve_daily_view.py: %v\n%s", err, out)
	}
	for _, reader := range []string{"pyiceberg", "duckdb"} {
		same(t, reader+": the daily rows of power", anyRows(got[reader]), want)
	}
	t.Logf("%d daily rows below W %s read alike in MeterStore, PyIceberg and DuckDB", len(want), f.w)
	p.stop(t)
}

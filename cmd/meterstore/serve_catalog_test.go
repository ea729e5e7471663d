package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
)

// catalogDays is how many days of readings TestServeCatalog archives.
const catalogDays = 3

// daysCSV returns quarter hours of meters market locations on days days
// from 2026-03-01, each day's values apart so that a day mixed up with
// another shows in its sum.
func daysCSV(meters, days int) string {
	var b strings.Builder
	b.WriteString("malo_id,obis_code,from,to,value,unit,quality,resolution,version,version_scope\n")
	for d := range days {
		for i := range meters {
			m, _ := metering.MaLoFromPrefix(fmt.Sprintf("%010d", 2_000_000_000+i))
			for q := range 96 {
				from := time.Date(2026, 3, 1+d, 0, 0, 0, 0, time.UTC).Add(time.Duration(q) * 15 * time.Minute)
				fmt.Fprintf(&b, "%s,1-1:1.29.0,%s,%s,%d.%03d,kWh,220,PT15M,20260302000000,9900000000003:2026-03\n",
					m.String(), from.Format(time.RFC3339), from.Add(15*time.Minute).Format(time.RFC3339), d+1, q)
			}
		}
	}
	return b.String()
}

// TestServeCatalog runs the real binary with an archived table and has
// foreign clients read it through the Iceberg REST catalog that serve
// mounts at /iceberg: PyIceberg's RestCatalog with a client credential
// (list, load, scan, snapshots) and DuckDB 1.4.4's iceberg extension,
// loaded offline from the duckdb-ext-* wheels, attaching with an OAuth2
// secret. Both must agree per day with POST /v1/query over
// readings_versions, and be refused without a token. Python with
// pyiceberg, pyarrow and duckdb is required (.ci/run installs them);
// without them the test fails in CI and is skipped elsewhere.
func TestServeCatalog(t *testing.T) {
	if err := exec.Command("python3", "-c", "import pyiceberg, pyarrow, duckdb").Run(); err != nil {
		const msg = "python3 with pyiceberg, pyarrow and duckdb is required: see .ci/run"
		if os.Getenv("CI") != "" {
			t.Fatal(msg, err)
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	cfgPath, _ := deploymentConfig(t, dir)
	lakeTok, lakeSection := parseToken(t, mustRun(t, "token", "--name", "lake", "--scope", "catalog"))
	queryTok, querySection := parseToken(t, mustRun(t, "token", "--name", "reporting", "--scope", "query"))
	text, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg := withServerKeys(t, string(text), map[string]string{"listen": `"127.0.0.1:0"`}) + "\n" + lakeSection + querySection
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	c := []string{"-c", cfgPath}
	mustRun(t, append([]string{"create", "--now", "2026-03-01T00:00:00Z"}, c...)...)
	deliv := filepath.Join(dir, "days.csv")
	if err := os.WriteFile(deliv, []byte(daysCSV(2, catalogDays)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := mustRun(t, append([]string{"ingest", "--table", "power", deliv}, c...)...); !strings.Contains(out, fmt.Sprintf("%d inserted", 2*96*catalogDays)) {
		t.Fatalf("ingest: %s", out)
	}
	// The default settlement lag is 45 days: on May 1 every day is cold.
	if out := mustRun(t, append([]string{"archive", "--now", "2026-05-01T00:00:00Z"}, c...)...); !strings.Contains(out, "power: archived") {
		t.Fatalf("archive: %s", out)
	}

	p, base := startTLSServe(t, bin, cfgPath)
	spec := map[string]any{
		"base":        base,
		"catalog_uri": base + "/iceberg",
		"client_id":   "lake",
		"secret":      lakeTok,
		"query_token": queryTok,
		"namespace":   "meterstore",
		"table":       "power",
		"days":        catalogDays,
		"rows_a_day":  2 * 96,
	}
	specPath := filepath.Join(dir, "spec.json")
	data, _ := json.Marshal(spec)
	if err := os.WriteFile(specPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), "python3", "testdata/serve_catalog.py", specPath).CombinedOutput()
	t.Logf("serve_catalog.py:\n%s", out)
	if err != nil {
		t.Errorf("serve_catalog.py: %v", err)
	}
	p.stop(t)
	log := p.stderr.String()
	for _, secret := range []string{lakeTok, queryTok} {
		if strings.Contains(log, secret) {
			t.Errorf("serve's log holds a token:\n%s", log)
		}
	}
	// The access tokens the clients were issued are printed by the
	// script on lines "access token: <token>"; none may be in the log.
	for _, l := range strings.Split(string(out), "\n") {
		if tok, ok := strings.CutPrefix(l, "access token: "); ok && tok != "" && strings.Contains(log, tok) {
			t.Errorf("serve's log holds an access token:\n%s", log)
		}
	}
	if t.Failed() {
		t.Logf("serve's log:\n%s", log)
	}
}

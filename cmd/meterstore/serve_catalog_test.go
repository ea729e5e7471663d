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
// secret, and docs/foreign-engines.md's DuckDB statements as printed there
// (serve's address and the token "duckdb" in place of its placeholders).
// Both must agree per day with POST /v1/query over readings_versions, and
// be refused without a token; PyIceberg's append is refused after it wrote
// its files, which stay. PyIceberg loads the
// readings view; DuckDB, which loads no views, runs its duckdb SQL. Python with
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
	d := newCatalogDeployment(t)
	dir, c := d.dir, []string{"-c", d.cfgPath}
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

	secret := d.addToken(t, "duckdb", "catalog")
	p, base := startTLSServe(t, d.bin, d.cfgPath)
	spec := map[string]any{
		"duckdb_doc":  docText(docBlock(t, foreignDoc, "CREATE SECRET"), base, secret),
		"warehouse":   filepath.Join(dir, "wh"),
		"base":        base,
		"catalog_uri": base + "/iceberg",
		"client_id":   "lake",
		"secret":      d.lakeTok,
		"query_token": d.queryTok,
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
	d.checkLog(t, p.stderr.String(), string(out))
}

// catalogDeployment is a created deployment whose serve mounts the
// catalog: tables declared, nothing delivered yet.
type catalogDeployment struct {
	dir, bin, cfgPath string
	lakeTok           string // of the token "lake", scope catalog
	queryTok          string // of the token "reporting", scope query
}

// newCatalogDeployment builds the binary and creates a deployment that
// serves plain HTTP on a free port of 127.0.0.1, with a token of scope
// catalog and one of scope query.
func newCatalogDeployment(t *testing.T) *catalogDeployment {
	t.Helper()
	d := &catalogDeployment{dir: t.TempDir()}
	d.bin = buildBinary(t, d.dir)
	d.cfgPath, _ = deploymentConfig(t, d.dir)
	text, err := os.ReadFile(d.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg := withServerKeys(t, string(text), map[string]string{"listen": `"127.0.0.1:0"`}) + "\n" + d.newTokens(t)
	if err := os.WriteFile(d.cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "create", "--now", "2026-03-01T00:00:00Z", "-c", d.cfgPath)
	return d
}

// newTokens makes the tokens "lake" (scope catalog) and "reporting"
// (scope query) of d and returns their configuration sections.
func (d *catalogDeployment) newTokens(t *testing.T) string {
	t.Helper()
	var lakeSection, querySection string
	d.lakeTok, lakeSection = parseToken(t, mustRun(t, "token", "--name", "lake", "--scope", "catalog"))
	d.queryTok, querySection = parseToken(t, mustRun(t, "token", "--name", "reporting", "--scope", "query"))
	return lakeSection + querySection
}

// checkLog fails t if serve's log holds a configured token or one of the
// access tokens a client script printed on lines "access token: <token>",
// and shows the log when t failed.
func (d *catalogDeployment) checkLog(t *testing.T, log, scriptOut string) {
	t.Helper()
	for _, secret := range []string{d.lakeTok, d.queryTok} {
		if strings.Contains(log, secret) {
			t.Errorf("serve's log holds a token:\n%s", log)
		}
	}
	for _, l := range strings.Split(scriptOut, "\n") {
		if tok, ok := strings.CutPrefix(l, "access token: "); ok && tok != "" && strings.Contains(log, tok) {
			t.Errorf("serve's log holds an access token:\n%s", log)
		}
	}
	if t.Failed() {
		t.Logf("serve's log:\n%s", log)
	}
}

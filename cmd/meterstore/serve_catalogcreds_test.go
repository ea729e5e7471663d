package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meterstore/meterstore/internal/s3test"
)

// TestServeCatalogVend runs the real binary on an S3 warehouse (the test
// server on 127.0.0.1) with server.catalog_vend_credentials, and has
// PyIceberg 0.12's RestCatalog read the archived table with no S3
// credentials of its own: a token of scopes catalog and storage scans
// MeterStore's rows with the vended key pair; a token of scope catalog
// alone, and the trusted token whose client does not ask for vended
// credentials, load the table but fail to read its files. The vended
// secret never reaches serve's log. Python with pyiceberg and pyarrow and
// the S3 server are required: without them the test fails in CI and is
// skipped elsewhere.
//
// The key pair vended is the test server's only one, which also writes:
// versitygw without its IAM service has no read-only pair to give.
// Production gives server.catalog_vend_* a read-only pair of its own.
func TestServeCatalogVend(t *testing.T) {
	if err := exec.Command("python3", "-c", "import pyiceberg, pyarrow").Run(); err != nil {
		const msg = "python3 with pyiceberg and pyarrow is required: see .ci/run"
		if os.Getenv("CI") != "" {
			t.Fatal(msg, err)
		}
		t.Skip(msg)
	}
	endpoint := s3test.Endpoint(t)
	keyID, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if keyID == "" || secret == "" {
		t.Fatal("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY of the S3 test server are not set: eval \"$(.ci/s3server.sh)\"")
	}
	bucket := s3test.NewBucket(t)

	dir := t.TempDir()
	bin := buildBinary(t, dir)
	cfgPath, _ := deploymentConfig(t, dir)
	tokens := map[string]string{}
	var sections string
	for name, scopes := range map[string]string{"trusted": "catalog,storage", "lake": "catalog", "reporting": "query"} {
		tok, section := parseToken(t, mustRun(t, "token", "--name", name, "--scope", scopes))
		tokens[name], sections = tok, sections+section
	}
	text, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg := withServerKeys(t, string(text), map[string]string{"listen": `"127.0.0.1:0"`})
	for old, repl := range map[string]string{
		`url = "file://` + filepath.Join(dir, "wh") + `"`: fmt.Sprintf("url = %q", s3test.URL(t, bucket)),
		"catalog_vend_credentials = false":                "catalog_vend_credentials = true",
		`catalog_vend_access_key_id = ""`:                 `catalog_vend_access_key_id = "${AWS_ACCESS_KEY_ID}"`,
		`catalog_vend_secret_access_key = ""`:             `catalog_vend_secret_access_key = "${AWS_SECRET_ACCESS_KEY}"`,
	} {
		if !strings.Contains(cfg, old) {
			t.Fatalf("the configuration has no line %s", old)
		}
		cfg = strings.Replace(cfg, old, repl, 1)
	}
	if err := os.WriteFile(cfgPath, []byte(cfg+"\n"+sections), 0o644); err != nil {
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
	if out := mustRun(t, append([]string{"archive", "--now", "2026-05-01T00:00:00Z"}, c...)...); !strings.Contains(out, "power: archived") {
		t.Fatalf("archive: %s", out)
	}

	p, base := startTLSServe(t, bin, cfgPath)
	spec := map[string]any{
		"base":          base,
		"catalog_uri":   base + "/iceberg",
		"tokens":        tokens,
		"query_token":   tokens["reporting"],
		"namespace":     "meterstore",
		"table":         "power",
		"days":          catalogDays,
		"rows_a_day":    2 * 96,
		"s3_endpoint":   endpoint,
		"vended_secret": secret,
	}
	specPath := filepath.Join(dir, "spec.json")
	data, _ := json.Marshal(spec)
	if err := os.WriteFile(specPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	// The client has no S3 credentials: none in its environment, no
	// shared files, no instance metadata to ask.
	py := exec.CommandContext(t.Context(), "python3", "testdata/serve_catalog_creds.py", specPath)
	home := t.TempDir()
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "HOME=") {
			py.Env = append(py.Env, kv)
		}
	}
	py.Env = append(py.Env, "HOME="+home, "AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE="+filepath.Join(home, "none"), "AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(home, "none"))
	out, err := py.CombinedOutput()
	t.Logf("serve_catalog_creds.py:\n%s", out)
	if err != nil {
		t.Errorf("serve_catalog_creds.py: %v", err)
	}
	p.stop(t)
	log := p.stderr.String()
	for name, tok := range tokens {
		if strings.Contains(log, tok) {
			t.Errorf("serve's log holds the token %s", name)
		}
	}
	if strings.Contains(log, secret) {
		t.Errorf("serve's log holds the vended secret")
	}
	if t.Failed() {
		t.Logf("serve's log:\n%s", strings.ReplaceAll(log, secret, "<secret>"))
	}
}

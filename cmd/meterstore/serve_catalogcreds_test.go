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
//
// The settings and the token are docs/serving.md's, as printed: its
// [server] keys replace the template's, the key id's placeholder alone
// becomes the test server's, the secret comes from the environment
// variable the document names, and the token section meterstore token
// prints must be the document's but for the hash.
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
	vendKeys, docTok := vendDoc(t)
	for name, scopes := range map[string]string{docTok.name: docTok.scopes, "lake": "catalog", "reporting": "query"} {
		tok, section := parseToken(t, mustRun(t, "token", "--name", name, "--scope", scopes))
		if name == docTok.name {
			hash := regexp.MustCompile(`sha256:[0-9a-f]{64}`).FindString(section)
			if want := strings.Replace(docTok.section, "sha256:...", hash, 1); strings.TrimSpace(section) != want {
				t.Fatalf("meterstore token prints\n%s\ndocs/serving.md shows\n%s", section, docTok.section)
			}
		}
		tokens[name], sections = tok, sections+section
	}
	text, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg := withServerKeys(t, string(text), map[string]string{"listen": `"127.0.0.1:0"`})
	wh := `url = "file://` + filepath.Join(dir, "wh") + `"`
	if !strings.Contains(cfg, wh) {
		t.Fatalf("the configuration has no line %s", wh)
	}
	cfg = strings.Replace(cfg, wh, fmt.Sprintf("url = %q", s3test.URL(t, bucket)), 1)
	for key, value := range vendKeys {
		line := regexp.MustCompile(`(?m)^` + key + ` = .*$`)
		if !line.MatchString(cfg) {
			t.Fatalf("the configuration has no key %s", key)
		}
		value = strings.Replace(value, `"AKIA..."`, `"${AWS_ACCESS_KEY_ID}"`, 1)
		cfg = line.ReplaceAllLiteralString(cfg, key+" = "+value)
	}
	t.Setenv("METERSTORE_VEND_SECRET", secret)
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

// A docToken is the token section of a document: its name and scopes as
// meterstore token takes them, and the section as printed.
type docToken struct {
	name, scopes, section string
}

// vendDoc returns the [server] keys of docs/serving.md's vended-credentials
// snippet, each with its value as printed, and its token section, without
// the comments.
func vendDoc(t *testing.T) (map[string]string, docToken) {
	t.Helper()
	server := docBlock(t, "../../docs/serving.md", "[server]")
	token := docBlock(t, "../../docs/serving.md", "[[server.token]]")
	comment := regexp.MustCompile(`\s+#.*$`)
	keys := map[string]string{}
	for _, l := range strings.Split(server, "\n")[1:] {
		if k, v, ok := strings.Cut(comment.ReplaceAllString(l, ""), " = "); ok {
			keys[k] = v
		}
	}
	var lines []string
	tok := docToken{}
	for _, l := range strings.Split(token, "\n") {
		l = comment.ReplaceAllString(l, "")
		if l == "" {
			continue
		}
		lines = append(lines, l)
		k, v, _ := strings.Cut(l, " = ")
		switch k {
		case "name":
			tok.name = strings.Trim(v, `"`)
		case "scopes":
			tok.scopes = strings.NewReplacer(`"`, "", " ", "", "[", "", "]", "").Replace(v)
		}
	}
	tok.section = strings.Join(lines, "\n")
	if len(keys) == 0 || tok.name == "" || tok.scopes == "" {
		t.Fatalf("docs/serving.md's vended credentials: keys %v, token %+v", keys, tok)
	}
	return keys, tok
}

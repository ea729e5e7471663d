package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meterstore/meterstore/config"
)

// TestToken: meterstore token prints a token and a section that check
// accepts, holding the token's hash and not the token.
func TestToken(t *testing.T) {
	out := mustRun(t, "token", "--name", "billing", "--scope", "ingest,query", "--table", "power")
	tok, section := parseToken(t, out)
	if len(tok) != 43 || strings.Contains(section, tok) {
		t.Fatalf("token %q, section:\n%s", tok, section)
	}
	cfg, err := config.Parse([]byte(section+"[[table]]\nname = \"power\"\n"), t.TempDir(), nil)
	if err != nil {
		t.Fatalf("the printed section does not parse: %v\n%s", err, section)
	}
	want := config.Token{Name: "billing", Hash: sha256.Sum256([]byte(tok)), Scopes: []string{"ingest", "query"}, Tables: []string{"power"}}
	if got := cfg.Server.Tokens; len(got) != 1 || got[0].Name != want.Name || got[0].Hash != want.Hash ||
		!slices.Equal(got[0].Scopes, want.Scopes) || !slices.Equal(got[0].Tables, want.Tables) {
		t.Errorf("tokens = %+v; want %+v", got, want)
	}
	if out, code := run(t, "token", "--scope", "write"); code != exitPermanent || !strings.Contains(out, `"write"`) {
		t.Errorf("token --scope write: exit %d\n%s", code, out)
	}
}

// parseToken splits the output of meterstore token into the token and
// the section.
func parseToken(t *testing.T, out string) (string, string) {
	t.Helper()
	_, rest, ok := strings.Cut(out, "it is not shown again:\n")
	tok, section, ok2 := strings.Cut(rest, "\n\n# Add this section to the configuration:\n")
	if !ok || !ok2 {
		t.Fatalf("meterstore token printed:\n%s", out)
	}
	return tok, section
}

// buildBinary builds the meterstore command into dir.
func buildBinary(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "meterstore")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// lockedBuffer collects a process's output for the test to read while it
// runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestServe runs the real binary: meterstore serve on a free port of
// 127.0.0.1, asked over HTTP by Go and by Python's urllib, then SIGTERM
// and exit 0.
func TestServe(t *testing.T) {
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	cfgPath, _ := deploymentConfig(t, dir)
	tokOut := mustRun(t, "token", "--name", "reporting", "--scope", "query")
	tok, section := parseToken(t, tokOut)
	// The loader may write to power only: the Python client posts a
	// delivery of today to it, so today's partitions are created first.
	loaderOut := mustRun(t, "token", "--name", "loader", "--scope", "ingest", "--table", "power")
	loaderTok, loaderSection := parseToken(t, loaderOut)
	adminTok, adminSection := parseToken(t, mustRun(t, "token", "--name", "ops", "--scope", "admin"))
	text, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(text), `listen = "127.0.0.1:8080"`, `listen = "127.0.0.1:0"`, 1) + "\n" + section + loaderSection + adminSection
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "create", "-c", cfgPath)

	p := startServe(t, bin, cfgPath)
	base := p.base

	client := &http.Client{Timeout: 30 * time.Second}
	get := func(path, tok string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), "GET", base+path, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var body map[string]any
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatalf("GET %s: %d %q is not JSON", path, resp.StatusCode, b)
		}
		return resp.StatusCode, body
	}
	if code, body := get("/healthz", ""); code != 200 || body["status"] != "ok" {
		t.Errorf("healthz: %d %v", code, body)
	}
	if code, body := get("/v1/status", ""); code != 401 {
		t.Errorf("status without a token: %d %v", code, body)
	}
	if code, body := get("/v1/status", loaderTok); code != 403 {
		t.Errorf("status with an ingest token: %d %v", code, body)
	}
	if code, body := get("/metrics", tok); code != 403 {
		t.Errorf("metrics with a query token: %d %v", code, body)
	}
	code, body := get("/v1/status", tok)
	if tables, _ := body["tables"].([]any); code != 200 || len(tables) != 2 {
		t.Errorf("status: %d %v", code, body)
	}

	t.Run("python", func(t *testing.T) {
		if _, err := exec.LookPath("python3"); err != nil {
			t.Skip("python3 is not installed")
		}
		out, err := exec.CommandContext(t.Context(), "python3", "testdata/serve_interop.py", base, tok, loaderTok, adminTok).CombinedOutput()
		if err != nil {
			t.Fatalf("serve_interop.py: %v\n%s", err, out)
		}
		t.Logf("serve_interop.py: %s", out)
	})
	t.Run("python query formats", func(t *testing.T) {
		if err := exec.Command("python3", "-c", "import pyarrow").Run(); err != nil {
			t.Skip("python3 with pyarrow is not installed")
		}
		out, err := exec.CommandContext(t.Context(), "python3", "testdata/serve_query_formats.py", base, tok).CombinedOutput()
		if err != nil {
			t.Fatalf("serve_query_formats.py: %v\n%s", err, out)
		}
		t.Logf("serve_query_formats.py: %s", out)
	})

	if code := p.terminate(time.Minute); code != 0 {
		t.Fatalf("after SIGTERM: exit %d\n%s", code, p.stderr.String())
	}
	log := p.stderr.String()
	t.Logf("serve's log:\n%s", log)
	if !strings.Contains(log, "shutting down") {
		t.Errorf("no shutdown in the log:\n%s", log)
	}
	for _, secret := range []string{tok, loaderTok, adminTok} {
		if strings.Contains(log, secret) {
			t.Errorf("the log holds a token:\n%s", log)
		}
	}
	if _, err := client.Get(base + "/healthz"); err == nil {
		t.Error("the server still answers after its exit")
	}
}

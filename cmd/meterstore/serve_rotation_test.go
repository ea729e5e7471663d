package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

// TestServeTokenRotation runs the real binary: a catalog token obtains an
// OAuth2 access token and an admin token a dashboard session; both still
// work after serve restarts with the same configuration, and both are
// refused after it restarts with the two tokens rotated (the same names,
// new hashes), as are the old tokens themselves, while the new ones work.
func TestServeTokenRotation(t *testing.T) {
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	cfgPath, _ := deploymentConfig(t, dir)
	lakeTok, lakeSection := parseToken(t, mustRun(t, "token", "--name", "lake", "--scope", "catalog"))
	opsTok, opsSection := parseToken(t, mustRun(t, "token", "--name", "ops", "--scope", "admin"))
	text, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg := withServerKeys(t, string(text), map[string]string{"listen": `"127.0.0.1:0"`}) + "\n" + lakeSection + opsSection
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "create", "--now", "2026-03-01T00:00:00Z", "-c", cfgPath)

	client := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(req *http.Request) (*http.Response, string) {
		t.Helper()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", req.Method, req.URL, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	post := func(p *serveProc, path string, form url.Values) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), "POST", p.base+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return do(req)
	}
	// accessToken exchanges a catalog token for an access token.
	accessToken := func(p *serveProc, tok string) string {
		t.Helper()
		resp, body := post(p, "/iceberg/v1/oauth/tokens", url.Values{"grant_type": {"client_credentials"}, "client_id": {"lake"}, "client_secret": {tok}})
		var answer struct {
			AccessToken string `json:"access_token"`
		}
		if err := json.Unmarshal([]byte(body), &answer); resp.StatusCode != 200 || err != nil || answer.AccessToken == "" {
			t.Fatalf("the token exchange: %d %s", resp.StatusCode, body)
		}
		return answer.AccessToken
	}
	// session logs in with an admin token for a session cookie.
	session := func(p *serveProc, tok string) *http.Cookie {
		t.Helper()
		resp, _ := post(p, "/dashboard/login", url.Values{"token": {tok}})
		if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
			t.Fatalf("login: %d %v", resp.StatusCode, resp.Header)
		}
		return resp.Cookies()[0]
	}
	// catalog answers GET /iceberg/v1/namespaces with bearer tok.
	catalog := func(p *serveProc, tok string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), "GET", p.base+"/iceberg/v1/namespaces", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, body := do(req)
		return resp.StatusCode, body
	}
	// page answers GET / with the session cookie c: the status and the
	// Location (the page itself is long and not the point here).
	page := func(p *serveProc, c *http.Cookie) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), "GET", p.base+"/", nil)
		req.AddCookie(c)
		resp, _ := do(req)
		return resp.StatusCode, "Location: " + resp.Header.Get("Location")
	}

	p := startServe(t, bin, cfgPath)
	access := accessToken(p, lakeTok)
	cookie := session(p, opsTok)
	if code, body := catalog(p, access); code != 200 {
		t.Fatalf("the access token: %d %s", code, body)
	}
	if code, body := page(p, cookie); code != 200 {
		t.Fatalf("the session: %d %s", code, body)
	}
	if code := p.terminate(time.Minute); code != 0 {
		t.Fatalf("serve exited %d\n%s", code, p.stderr.String())
	}

	// A restart with the tokens unchanged keeps both.
	p = startServe(t, bin, cfgPath)
	if code, body := catalog(p, access); code != 200 {
		t.Errorf("the access token after a restart with the same hash: %d %s; want 200", code, body)
	}
	if code, body := page(p, cookie); code != 200 {
		t.Errorf("the session after a restart with the same hash: %d %s; want 200", code, body)
	}
	if code := p.terminate(time.Minute); code != 0 {
		t.Fatalf("serve exited %d\n%s", code, p.stderr.String())
	}

	// Rotated: the same names, new tokens and hashes.
	newLakeTok, newLakeSection := parseToken(t, mustRun(t, "token", "--name", "lake", "--scope", "catalog"))
	newOpsTok, newOpsSection := parseToken(t, mustRun(t, "token", "--name", "ops", "--scope", "admin"))
	rotated := strings.Replace(strings.Replace(cfg, lakeSection, newLakeSection, 1), opsSection, newOpsSection, 1)
	if rotated == cfg || !strings.Contains(rotated, `name = "lake"`) || !strings.Contains(rotated, `name = "ops"`) {
		t.Fatalf("the tokens were not rotated:\n%s", rotated)
	}
	if err := os.WriteFile(cfgPath, []byte(rotated), 0o644); err != nil {
		t.Fatal(err)
	}
	p = startServe(t, bin, cfgPath)
	if code, body := catalog(p, access); code != http.StatusUnauthorized {
		t.Errorf("the access token after the rotation: %d %s; want 401", code, body)
	}
	if code, body := page(p, cookie); code != http.StatusSeeOther || body != "Location: /dashboard/login" {
		t.Errorf("the session after the rotation: %d %s; want 303 to the login page", code, body)
	}
	if code, body := catalog(p, lakeTok); code != http.StatusUnauthorized {
		t.Errorf("the old catalog token after the rotation: %d %s; want 401", code, body)
	}
	if code, body := catalog(p, accessToken(p, newLakeTok)); code != 200 {
		t.Errorf("an access token of the new catalog token: %d %s", code, body)
	}
	if code, body := page(p, session(p, newOpsTok)); code != 200 {
		t.Errorf("a session of the new admin token: %d %s", code, body)
	}
	if code := p.terminate(time.Minute); code != 0 {
		t.Errorf("serve exited %d\n%s", code, p.stderr.String())
	}
	for _, secret := range []string{lakeTok, opsTok, newLakeTok, newOpsTok, access, cookie.Value} {
		if strings.Contains(p.stderr.String(), secret) {
			t.Errorf("serve's log holds a secret:\n%s", p.stderr.String())
		}
	}
}

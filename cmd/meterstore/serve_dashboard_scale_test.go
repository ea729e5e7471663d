package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// navTiming is injected into the dashboard by the test's proxy: on the
// load event it writes the page's Navigation Timing into the DOM, which
// chromium's --dump-dom then shows.
const navTiming = `<script>addEventListener("load", () => {
	const n = performance.getEntriesByType("navigation")[0];
	const p = document.createElement("pre");
	p.id = "nav-timing";
	p.textContent = JSON.stringify({responseStart: n.responseStart, responseEnd: n.responseEnd,
		domContentLoaded: n.domContentLoadedEventEnd, loadStart: n.loadEventStart});
	document.body.appendChild(p);
});</script>`

// TestServeDashboardScale loads the dashboard of a deployment of 300
// meters with two archived days (MS_DASHBOARD_DAYS), so that completeness
// comes from the stored daily rollup, in headless Chromium, and prints
// the load time the browser measured (Navigation Timing). It asserts the
// page's content, never its time: every meter's day is present on each
// archived day. The scale the dashboard is measured at, 5,000 meters, is
// opt-in, as MS_DASHBOARD_METERS=5000: it takes about 8 minutes under
// -race, too long for every CI run.
func TestServeDashboardScale(t *testing.T) {
	if testing.Short() {
		t.Skip("ingests a million readings")
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (apt-get install chromium)")
	}
	meters, days := envInt("MS_DASHBOARD_METERS", 300), envInt("MS_DASHBOARD_DAYS", 2)
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	cfgPath, _ := deploymentConfig(t, dir)
	adminTok, adminSection := parseToken(t, mustRun(t, "token", "--name", "ops", "--scope", "admin"))
	text, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfgText := strings.Replace(string(text), `listen = "127.0.0.1:8080"`, `listen = "127.0.0.1:0"`, 1) + "\n" + adminSection
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	c := []string{"-c", cfgPath}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	today := time.Now().In(berlin)
	day := time.Date(today.Year(), today.Month(), today.Day()-60, 0, 0, 0, 0, berlin)
	mustRun(t, append([]string{"create", "--now", day.UTC().Format(time.RFC3339)}, c...)...)
	deliv := filepath.Join(dir, "power.csv")
	if err := os.WriteFile(deliv, []byte(dashboardCSV(day, meters, days)), 0o644); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	mustRun(t, append([]string{"ingest", "--table", "power", deliv}, c...)...)
	ingested := time.Since(begin)
	os.Remove(deliv)
	begin = time.Now()
	mustRun(t, append([]string{"archive"}, c...)...)
	t.Logf("%d meters × %d days: ingest %v, archive %v", meters, days, ingested.Round(time.Millisecond), time.Since(begin).Round(time.Millisecond))

	p := startServe(t, bin, cfgPath)
	client := &http.Client{Timeout: 2 * time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequestWithContext(t.Context(), "POST", p.base+"/dashboard/login", strings.NewReader(url.Values{"token": {adminTok}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("login: %d %v", resp.StatusCode, resp.Header)
	}
	session := resp.Cookies()[0]
	// The server's own time for the page, without a browser, for where
	// the browser's time goes.
	for i := range 2 {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", p.base+"/", nil)
		req.AddCookie(session)
		begin := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		fmt.Printf("dashboard, %d meters × %d archived days, GET / %d: %d, %d bytes in %v (Go client)\n",
			meters, days, i, resp.StatusCode, n, time.Since(begin).Round(time.Millisecond))
	}

	// The proxy carries the session, as in TestServeDashboard, and adds
	// the timing script, which the page's policy would refuse: it drops
	// the policy on the way to the test's browser only.
	target, _ := url.Parse(p.base)
	rp := httputil.NewSingleHostReverseProxy(target)
	inner := rp.Director
	rp.Director = func(r *http.Request) { inner(r); r.AddCookie(session); r.Header.Del("Accept-Encoding") }
	rp.ModifyResponse = func(r *http.Response) error {
		if !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
			return nil
		}
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return err
		}
		body = bytes.Replace(body, []byte("</body>"), []byte(navTiming+"</body>"), 1)
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		r.Header.Del("Content-Security-Policy")
		return nil
	}
	proxy := httptest.NewServer(rp)
	defer proxy.Close()

	load := func(n int) (string, map[string]float64) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
			"--user-data-dir="+filepath.Join(dir, fmt.Sprintf("chromium-%d", n)), "--window-size=1280,2600", "--dump-dom", proxy.URL+"/")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("chromium: %v\n%s", err, stderr.String())
		}
		dom := string(out)
		m := regexp.MustCompile(`<pre id="nav-timing">([^<]*)</pre>`).FindStringSubmatch(dom)
		if m == nil {
			t.Fatalf("the page has no navigation timing:\n%.2000s", dom)
		}
		var timing map[string]float64
		if err := json.Unmarshal([]byte(strings.ReplaceAll(m[1], "&quot;", `"`)), &timing); err != nil {
			t.Fatalf("navigation timing %q: %v", m[1], err)
		}
		return dom, timing
	}
	// The first load warms the caches of the rollup's and the table's
	// files; the second is the one an operator opening it again sees.
	for i := range 2 {
		dom, timing := load(i)
		power := section(t, dom, "power")
		perDay := strconv.Itoa(meters * 96)
		for d := range days {
			ymd := day.AddDate(0, 0, d).Format(time.DateOnly)
			if want := ymd + ": " + perDay + " of " + perDay + " present"; !strings.Contains(power, want) {
				t.Errorf("load %d: power's completeness lacks %q", i, want)
			}
		}
		fmt.Printf("dashboard, %d meters × %d archived days, load %d: response start %.0f ms, response end %.0f ms, DOMContentLoaded %.0f ms, load %.0f ms (Navigation Timing)\n",
			meters, days, i, timing["responseStart"], timing["responseEnd"], timing["domContentLoaded"], timing["loadStart"])
	}
	if code := p.terminate(time.Minute); code != 0 {
		t.Errorf("serve exited %d\n%s", code, p.stderr.String())
	}
}

// envInt returns the positive integer in the environment variable name,
// or def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

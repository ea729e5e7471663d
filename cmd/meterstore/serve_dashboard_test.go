package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icetable "github.com/apache/iceberg-go/table"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/store"
)

// TestServeDashboard runs the real binary with an archived table (power)
// and a quarantined one (gas, whose cold schema gained a required column
// out of band), logs in through the form for a session cookie, loads the
// page in headless Chromium through a loopback proxy that carries the
// cookie, and checks the rendered DOM: both tables with their states, the
// watermark of the archived one, the reason of the quarantined one, the
// SVG charts. The screenshot is kept at os.TempDir()/meterstore-dashboard.png.
func TestServeDashboard(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is not installed: .ci/run installs Debian's chromium")
		}
		t.Skip("chromium is not installed (apt-get install chromium)")
	}
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	cfgPath, _ := deploymentConfig(t, dir)
	adminTok, adminSection := parseToken(t, mustRun(t, "token", "--name", "ops", "--scope", "admin"))
	readerTok, readerSection := parseToken(t, mustRun(t, "token", "--name", "reporting", "--scope", "query"))
	text, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfgText := strings.Replace(string(text), `listen = "127.0.0.1:8080"`, `listen = "127.0.0.1:0"`, 1) + "\n" + adminSection + readerSection
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	c := []string{"-c", cfgPath}

	// Two days of power, 60 days ago: older than the settlement lag
	// (45d), so an archival at today's time archives them.
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	today := time.Now().In(berlin)
	day := time.Date(today.Year(), today.Month(), today.Day()-60, 0, 0, 0, 0, berlin)
	mustRun(t, append([]string{"create", "--now", day.UTC().Format(time.RFC3339)}, c...)...)
	deliv := filepath.Join(dir, "power.csv")
	if err := os.WriteFile(deliv, []byte(dashboardCSV(day, 2, 3)), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, append([]string{"ingest", "--table", "power", deliv}, c...)...)
	mustRun(t, append([]string{"archive"}, c...)...)
	quarantine(t, cfgPath, "gas")

	p := startServe(t, bin, cfgPath)
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
	postLogin := func(tok string) (*http.Response, string) {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", p.base+"/dashboard/login", strings.NewReader(url.Values{"token": {tok}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return do(req)
	}
	get := func(cookie *http.Cookie) (*http.Response, string) {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", p.base+"/", nil)
		if cookie != nil {
			req.AddCookie(cookie)
		}
		return do(req)
	}

	// Without a session: the login page, never data.
	if resp, body := get(nil); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/dashboard/login" || strings.Contains(body, "power") {
		t.Fatalf("GET / without a session: %d %v %q", resp.StatusCode, resp.Header, body)
	}
	for _, bad := range []string{adminTok + "x", readerTok} {
		if resp, _ := postLogin(bad); resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
			t.Errorf("login with a wrong or query token: %d %v", resp.StatusCode, resp.Cookies())
		}
	}
	resp, _ := postLogin(adminTok)
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("login: %d %v", resp.StatusCode, resp.Header)
	}
	session := resp.Cookies()[0]
	if resp, body := get(session); resp.StatusCode != 200 || !strings.Contains(body, `data-table="gas"`) {
		t.Fatalf("GET / with the session: %d\n%s", resp.StatusCode, body)
	}

	// A session is not a bearer token of the catalog, though both are kept
	// in the same table of access tokens.
	req, _ := http.NewRequestWithContext(t.Context(), "GET", p.base+"/iceberg/v1/config", nil)
	req.Header.Set("Authorization", "Bearer "+session.Value)
	if resp, body := do(req); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the session as the catalog's bearer: %d %s; want 401", resp.StatusCode, body)
	}

	// Chromium cannot be handed a cookie on its command line: a proxy on
	// loopback adds it to every request, as the browser would.
	target, _ := url.Parse(p.base)
	rp := httputil.NewSingleHostReverseProxy(target)
	inner := rp.Director
	rp.Director = func(r *http.Request) { inner(r); r.AddCookie(session) }
	proxy := httptest.NewServer(rp)
	defer proxy.Close()

	shot := filepath.Join(os.TempDir(), "meterstore-dashboard.png")
	os.Remove(shot)
	browse := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
			"--user-data-dir=" + filepath.Join(dir, "chromium"), "--window-size=1280,2600"}, args...)
		cmd := exec.CommandContext(ctx, chromium, append(args, proxy.URL+"/")...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
		}
		return string(out)
	}
	dom := browse("--dump-dom")
	browse("--screenshot=" + shot)
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 10_000 {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	t.Logf("screenshot of the dashboard: %s", shot)

	power := section(t, dom, "power")
	gas := section(t, dom, "gas")
	if !strings.Contains(power, `data-archived="true"`) || !strings.Contains(power, "archived up to ") {
		t.Errorf("power is not shown archived with its watermark:\n%s", power)
	}
	if strings.Contains(power, `data-state="quarantined"`) {
		t.Errorf("power is shown quarantined:\n%s", power)
	}
	if !strings.Contains(gas, `data-state="quarantined"`) || !strings.Contains(gas, "quarantined") || !strings.Contains(gas, "tariff") {
		t.Errorf("gas is not shown quarantined with its reason (the column tariff):\n%s", gas)
	}
	for _, chart := range []string{"watermark lag at each commit", "rows archived per window", "write duration per window", "intervals per balancing day"} {
		if strings.Count(dom, `aria-label="`+chart) < 2 {
			t.Errorf("the page lacks the chart %q of both tables", chart)
		}
	}
	// The archival of power is plotted: its window bars, and the
	// completeness of its two days, present 2 meters × 96 intervals.
	if !strings.Contains(power, "<rect") || !strings.Contains(power, "192 of 192 present") {
		t.Errorf("power's charts lack the archived windows or the complete days:\n%s", power)
	}

	// Logout ends the session.
	req, _ = http.NewRequestWithContext(t.Context(), "POST", p.base+"/dashboard/logout", nil)
	req.AddCookie(session)
	if resp, _ := do(req); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("logout: %d", resp.StatusCode)
	}
	if resp, _ := get(session); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("GET / after logout: %d; want 303", resp.StatusCode)
	}
	if code := p.terminate(time.Minute); code != 0 {
		t.Errorf("serve exited %d\n%s", code, p.stderr.String())
	}
}

// section returns the rendered section of table name in dom.
func section(t *testing.T, dom, name string) string {
	t.Helper()
	_, rest, ok := strings.Cut(dom, `id="table-`+name+`"`)
	if !ok {
		t.Fatalf("the page does not show table %s:\n%s", name, dom)
	}
	s, _, _ := strings.Cut(rest, "</section>")
	return s
}

// dashboardCSV is a delivery of meters market locations with every
// quarter hour of n Berlin days from day.
func dashboardCSV(day time.Time, meters, n int) string {
	var b strings.Builder
	b.WriteString("malo_id,obis_code,from,to,value,unit,quality,resolution,version,version_scope\n")
	for i := range meters {
		m, _ := metering.MaLoFromPrefix(fmt.Sprintf("%010d", 2_000_000_000+i))
		for d := range n {
			start := time.Date(day.Year(), day.Month(), day.Day()+d, 0, 0, 0, 0, day.Location())
			end := time.Date(day.Year(), day.Month(), day.Day()+d+1, 0, 0, 0, 0, day.Location())
			for from := start; from.Before(end); from = from.Add(15 * time.Minute) {
				fmt.Fprintf(&b, "%s,1-1:1.29.0,%s,%s,1.000,kWh,220,PT15M,20260302000000,9900000000003:2026-03\n",
					m, from.UTC().Format(time.RFC3339), from.Add(15*time.Minute).UTC().Format(time.RFC3339))
			}
		}
	}
	return b.String()
}

// quarantine adds a required column to the cold schema of table name out
// of band, through the deployment's own catalog, as an operator's tool
// might: the declaration no longer matches and the table is quarantined.
func quarantine(t *testing.T, cfgPath, name string) {
	t.Helper()
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var cat *catalog.Catalog
	s, err := store.OpenConfig(t.Context(), cfg, nil, func(o *store.Options) { cat, _ = o.Catalog.(*catalog.Catalog) })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if cat == nil {
		t.Fatal("the deployment's catalog is not MeterStore's")
	}
	ice, err := cat.LoadTable(t.Context(), icetable.Identifier{cfg.Warehouse.Namespace, name})
	if err != nil {
		t.Fatal(err)
	}
	tx := ice.NewTransaction()
	if err := tx.UpdateSchema(true, true).AddColumn([]string{"tariff"}, iceberg.PrimitiveTypes.String, "", true, nil).Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
}

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/httpapi"
	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/metrics"
)

// TestMaintainMetricsListen runs maintain --metrics-listen 127.0.0.1:0
// over a deployment with a day due for archival and scrapes /metrics
// while the loop runs: refused without a token and with one lacking scope
// admin; with an admin token it shows the archival of the day and the
// log's compare-and-sets. Cancelling the command ends the loop and the
// serving.
func TestMaintainMetricsListen(t *testing.T) {
	dir := t.TempDir()
	cfgPath, _ := deploymentConfig(t, dir)
	adminTok, adminHash, err := config.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	queryTok, queryHash, err := config.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(cfgPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "\n[[server.token]]\nname = \"ops\"\nhash = %q\nscopes = [\"admin\"]\n", adminHash)
	fmt.Fprintf(f, "\n[[server.token]]\nname = \"reporting\"\nhash = %q\nscopes = [\"query\"]\n", queryHash)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	c := []string{"-c", cfgPath}
	// Plain HTTP only over loopback, as for server.listen.
	if out, code := run(t, append([]string{"maintain", "--once", "--metrics-listen", "0.0.0.0:0"}, c...)...); code != exitPermanent ||
		!strings.Contains(out, "not a loopback address") {
		t.Errorf("maintain --metrics-listen 0.0.0.0:0 without TLS: exit %d\n%s", code, out)
	}
	mustRun(t, append([]string{"create", "--now", "2026-03-01T00:00:00Z"}, c...)...)
	deliv := filepath.Join(dir, "day.csv")
	if err := os.WriteFile(deliv, []byte(deliveryCSV(2, -1)), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, append([]string{"ingest", "--table", "power", deliv}, c...)...)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out := &lockedBuffer{}
	root := newRoot()
	root.SetOut(out)
	root.SetErr(out)
	root.SetArgs(append([]string{"maintain", "--metrics-listen", "127.0.0.1:0"}, c...))
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	// Where it serves, and the first cycle's outcome.
	addr := regexp.MustCompile(`metrics at (http://127\.0\.0\.1:[0-9]+/metrics)\n`)
	var url string
	for deadline := time.Now().Add(2 * time.Minute); ; {
		if m := addr.FindStringSubmatch(out.String()); m != nil && strings.Contains(out.String(), "cycle at") {
			url = m[1]
			break
		}
		select {
		case err := <-done:
			t.Fatalf("maintain ended before its first cycle: %v\n%s", err, out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("maintain did not say where it serves and finish a cycle within 2 minutes\n%s", out.String())
		}
	}
	scrape := func(tok string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	if code, body := scrape(""); code != http.StatusUnauthorized || strings.Contains(body, "meterstore_") {
		t.Errorf("/metrics without a token: %d\n%s", code, body)
	}
	if code, body := scrape(queryTok); code != http.StatusForbidden || strings.Contains(body, "meterstore_") {
		t.Errorf("/metrics with scope query: %d\n%s", code, body)
	}
	code, text := scrape(adminTok)
	if code != http.StatusOK {
		t.Fatalf("/metrics with scope admin: %d\n%s", code, text)
	}
	for _, want := range []*regexp.Regexp{
		// The day's 2 × 96 readings, archived by the first cycle.
		regexp.MustCompile(`(?m)^meterstore_archival_rows_total\{[^}]*table="power"[^}]*\} 192$`),
		regexp.MustCompile(`(?m)^meterstore_archival_duration_seconds_count\{[^}]*table="power"[^}]*\} [1-9][0-9]*$`),
		regexp.MustCompile(`(?m)^meterstore_log_cas_duration_seconds_count\{backend="postgres",[^}]*outcome="committed"[^}]*\} [1-9][0-9]*$`),
		regexp.MustCompile(`(?m)^meterstore_table_healthy\{[^}]*table="power"[^}]*\} 1$`),
		regexp.MustCompile(`(?m)^meterstore_table_partitions_ahead\{[^}]*table="power"[^}]*\} [1-9][0-9]*$`),
		regexp.MustCompile(`(?m)^meterstore_http_auth_failures_total\{[^}]*reason="missing"[^}]*\} 1$`),
	} {
		if !want.MatchString(text) {
			t.Errorf("the exposition has no line matching %s", want)
		}
	}
	if t.Failed() {
		t.Logf("exposition:\n%s\noutput:\n%s", text, out.String())
	}
	healthz, err := http.Get(strings.TrimSuffix(url, "/metrics") + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	healthz.Body.Close()
	if healthz.StatusCode != http.StatusOK {
		t.Errorf("/healthz without a token: %d, want 200 (liveness takes none)", healthz.StatusCode)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("maintain, cancelled: %v\n%s", err, out.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("maintain did not end within 2 minutes of its cancellation")
	}
	if _, err := http.Get(url); err == nil {
		t.Error("/metrics still answers after maintain ended")
	}
}

// docRow is an instrument as docs/metrics.md documents it.
type docRow struct{ kind, labels string }

// TestMetricsDocumented records a sample on every instrument through the
// exporter serve and maintain use, and holds docs/metrics.md to what its
// /metrics shows: every instrument named meterstore_<area>_<what>_<unit>,
// and the table listing exactly those, with their types and labels.
func TestMetricsDocumented(t *testing.T) {
	mp, exposition, err := httpapi.Prometheus()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	m, err := metrics.New(mp)
	if err != nil {
		t.Fatal(err)
	}
	m.Sample(t.Context())
	w := httptest.NewRecorder()
	exposition.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	exported := exportedFamilies(t, w.Body.String())

	name := regexp.MustCompile(`^meterstore_[a-z]+_[a-z_]+$`)
	for n := range exported {
		if !name.MatchString(n) {
			t.Errorf("exported %s does not match %s", n, name)
		}
	}
	if len(exported) < 30 {
		t.Fatalf("the exporter shows %d instruments of MeterStore: %v", len(exported), slices.Sorted(maps.Keys(exported)))
	}

	text, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]docRow{}
	row := regexp.MustCompile("^\\| `(meterstore_[a-z_]+)` \\| ([a-z]+) \\| [^|]+ \\| ([^|]+) \\| [^|]+ \\|$")
	for line := range strings.SplitSeq(string(text), "\n") {
		if !strings.HasPrefix(line, "| `meterstore_") {
			continue
		}
		m := row.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("docs/metrics.md: a row not of the form | `name` | type | unit | labels | meaning |:\n%s", line)
			continue
		}
		if _, dup := documented[m[1]]; dup {
			t.Errorf("docs/metrics.md lists %s twice", m[1])
		}
		labels := strings.Fields(strings.NewReplacer("`", " ", ",", " ", "—", " ").Replace(m[3]))
		slices.Sort(labels)
		documented[m[1]] = docRow{kind: m[2], labels: strings.Join(labels, ",")}
	}
	for n, e := range exported {
		d, ok := documented[n]
		switch {
		case !ok:
			t.Errorf("docs/metrics.md does not list %s (%s, labels %q)", n, e.kind, e.labels)
		case d != e:
			t.Errorf("docs/metrics.md lists %s as %s with labels %q; /metrics shows %s with %q", n, d.kind, d.labels, e.kind, e.labels)
		}
	}
	for n := range documented {
		if _, ok := exported[n]; !ok {
			t.Errorf("docs/metrics.md lists %s, which /metrics does not show", n)
		}
	}
}

// exportedFamilies returns the metric families of MeterStore's scope in a
// Prometheus text exposition, with their types and label names (without
// the exporter's own otel_scope_* labels and a histogram's le).
func exportedFamilies(t *testing.T, text string) map[string]docRow {
	t.Helper()
	out := map[string]docRow{}
	label := regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="`)
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" && strings.HasPrefix(f[2], "meterstore_") {
			out[f[2]] = docRow{kind: f[3], labels: "?"}
			continue
		}
		series, _, ok := strings.Cut(line, "{")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		family := series
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(series, suffix); ok && out[base].kind == "histogram" {
				family = base
			}
		}
		e, ok := out[family]
		if !ok || e.labels != "?" {
			continue
		}
		var labels []string
		for _, m := range label.FindAllStringSubmatch(line, -1) {
			if k := m[1]; k != "le" && !strings.HasPrefix(k, "otel_scope_") {
				labels = append(labels, k)
			}
		}
		slices.Sort(labels)
		e.labels = strings.Join(labels, ",")
		out[family] = e
	}
	return out
}

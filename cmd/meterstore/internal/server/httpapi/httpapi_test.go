package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
	"github.com/meterstore/meterstore/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// openStore opens a deployment of one daily table, power, on a fresh
// test database and a warehouse in a temporary directory, with the
// options given.
func openStore(t testing.TB, with ...store.ConfigOption) *store.Store {
	t.Helper()
	return openTables(t, "[[table]]\nname = \"power\"\nresolutions = [\"PT15M\"]\n", with...)
}

// openTables is openStore with the [[table]] sections tables.
func openTables(t testing.TB, tables string, with ...store.ConfigOption) *store.Store {
	t.Helper()
	dir := t.TempDir()
	src := fmt.Sprintf(`
[postgres]
url = %q
data_dir = %q
[warehouse]
url = %q
`, pgtest.NewDB(t), dir, "file://"+filepath.Join(dir, "wh")) + tables
	cfg, err := config.Parse([]byte(src), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.OpenConfig(t.Context(), cfg, nil, with...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// token returns a configured token of name with scopes, and its text.
func token(t testing.TB, name string, scopes ...string) (config.Token, string) {
	t.Helper()
	text, _, err := config.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	return config.Token{Name: name, Hash: sha256.Sum256([]byte(text)), Scopes: scopes}, text
}

// call sends a request to h with the bearer token tok ("" for none) and
// returns the status and the decoded JSON body.
func call(t *testing.T, h http.Handler, method, path, tok string) (int, map[string]any, http.Header) {
	t.Helper()
	r := httptest.NewRequest(method, path, nil)
	if tok != "" {
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q", method, path, ct)
	}
	var body map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("%s %s: body %q is not a JSON object: %v", method, path, w.Body, err)
	}
	return w.Code, body, w.Header()
}

func TestHandler(t *testing.T) {
	s := openStore(t)
	query, queryTok := token(t, "reporting", config.ScopeQuery)
	ingest, ingestTok := token(t, "loader", config.ScopeIngest)
	admin, adminTok := token(t, "ops", config.ScopeAdmin)
	var logs bytes.Buffer
	reader := sdkmetric.NewManualReader()
	h, err := New(s, Options{
		Tokens: []config.Token{ingest, query, admin},
		Meters: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}

	// healthz needs no token.
	if code, body, _ := call(t, h, "GET", "/healthz", ""); code != 200 || body["status"] != "ok" {
		t.Errorf("healthz: %d %v", code, body)
	}

	// Refusals: no token, a wrong one, another scheme, the wrong scope.
	wrong, _, _ := config.NewToken()
	for _, tc := range []struct {
		name, path, auth string
		status           int
		code             string
	}{
		{"no token", "/v1/status", "", 401, "unauthorized"},
		{"wrong token", "/v1/status", "Bearer " + wrong, 401, "unauthorized"},
		{"basic auth", "/v1/status", "Basic " + queryTok, 401, "unauthorized"},
		{"empty bearer", "/v1/status", "Bearer ", 401, "unauthorized"},
		{"hash as token", "/v1/status", "Bearer " + config.HashToken(queryTok), 401, "unauthorized"},
		{"readyz without token", "/readyz", "", 401, "unauthorized"},
		{"wrong scope", "/v1/status", "Bearer " + ingestTok, 403, "forbidden"},
	} {
		r := httptest.NewRequest("GET", tc.path, nil)
		if tc.auth != "" {
			r.Header.Set("Authorization", tc.auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var body map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || w.Code != tc.status || body["code"] != tc.code || body["error"] == "" {
			t.Errorf("%s: %d %s; want %d with code %q", tc.name, w.Code, w.Body, tc.status, tc.code)
		}
		if tc.status == 401 && !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: WWW-Authenticate %q", tc.name, w.Header().Get("WWW-Authenticate"))
		}
	}
	// No token reaches the log; the refused one's name does.
	for _, secret := range []string{queryTok, ingestTok, adminTok, wrong} {
		if strings.Contains(logs.String(), secret) {
			t.Fatalf("the log holds a token:\n%s", logs.String())
		}
	}
	if !strings.Contains(logs.String(), "token=loader") {
		t.Errorf("the log does not name the token refused for its scope:\n%s", logs.String())
	}
	// Each refusal is counted by reason.
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "meterstore.http.auth_failures" {
				continue
			}
			for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
				reason, _ := p.Attributes.Value("reason")
				counts[reason.AsString()] += p.Value
			}
		}
	}
	if want := map[string]int64{"missing": 4, "invalid": 2, "forbidden": 1}; fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("auth failures by reason = %v; want %v", counts, want)
	}

	// The status, with the query scope and with admin.
	for _, tok := range []string{queryTok, adminTok} {
		code, body, _ := call(t, h, "GET", "/v1/status", tok)
		tables, _ := body["tables"].([]any)
		if code != 200 || len(tables) != 1 {
			t.Fatalf("status: %d %v", code, body)
		}
		pw := tables[0].(map[string]any)
		if pw["table"] != "power" || pw["watermark"] != nil || pw["healthy"] != true || pw["hot_partitions"] != 0.0 {
			t.Errorf("status of power: %v", pw)
		}
	}

	// Unknown routes and methods are JSON errors too, with or without a
	// token.
	for _, tok := range []string{"", queryTok} {
		if code, body, _ := call(t, h, "GET", "/v1/nothing", tok); code != 404 || body["code"] != "not_found" {
			t.Errorf("unknown route: %d %v", code, body)
		}
	}
	if code, body, hdr := call(t, h, "POST", "/v1/status", queryTok); code != 405 || body["code"] != "method_not_allowed" || hdr.Get("Allow") != "GET" {
		t.Errorf("POST /v1/status: %d %v %v", code, body, hdr)
	}
}

// TestReady: readyz needs a token of any scope, and answers 503 naming the
// tables that are unhealthy until they are healthy again.
func TestReady(t *testing.T) {
	s := openStore(t)
	ingest, ingestTok := token(t, "loader", config.ScopeIngest)
	now := time.Now()
	clock := now
	h, err := New(s, Options{Tokens: []config.Token{ingest}, Clock: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	if code, body, _ := call(t, h, "GET", "/readyz", ingestTok); code != 200 || body["status"] != "ready" {
		t.Errorf("readyz of a table not started: %d %v", code, body)
	}
	// Partitions that end before now: nothing can take a reading.
	if err := s.EnsurePartitions(t.Context(), now.AddDate(0, 0, -30)); err != nil {
		t.Fatal(err)
	}
	code, body, _ := call(t, h, "GET", "/readyz", ingestTok)
	if tables, _ := body["unhealthy_tables"].([]any); code != 503 || body["code"] != "not_ready" ||
		!slices.Equal(tables, []any{"power"}) || !strings.Contains(fmt.Sprint(body["error"]), "power") {
		t.Errorf("readyz without partitions ahead: %d %v", code, body)
	}
	if err := s.EnsurePartitions(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	if code, body, _ := call(t, h, "GET", "/readyz", ingestTok); code != 200 {
		t.Errorf("readyz with partitions ahead: %d %v", code, body)
	}
}

// TestMaxBody: a body past the bound fails to read.
func TestMaxBody(t *testing.T) {
	var readErr error
	h := &handler{o: Options{MaxBodyBytes: 10}, mux: newRouteMux()}
	h.mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) { _, readErr = io.ReadAll(r.Body) })
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/echo", strings.NewReader("0123456789abc")))
	if readErr == nil {
		t.Error("a body of 13 bytes under a bound of 10 was read whole")
	}
}

// TestMetrics: GET /metrics, with scope admin only, exposes in the
// Prometheus format the server's requests by route, its refusals and the
// store's instruments, all through the one provider.
func TestMetrics(t *testing.T) {
	mp, exposition, err := Prometheus()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	s := openStore(t, store.WithMeters(mp))
	query, queryTok := token(t, "reporting", config.ScopeQuery)
	admin, adminTok := token(t, "ops", config.ScopeAdmin)
	h, err := New(s, Options{Tokens: []config.Token{query, admin}, Meters: mp, Metrics: exposition})
	if err != nil {
		t.Fatal(err)
	}
	if code, _, _ := call(t, h, "GET", "/healthz", ""); code != 200 {
		t.Errorf("healthz: %d", code)
	}
	if code, _, _ := call(t, h, "GET", "/v1/status", queryTok); code != 200 {
		t.Errorf("status: %d", code)
	}
	// Refused: without a token, and with one lacking scope admin.
	if code, body, _ := call(t, h, "GET", "/metrics", ""); code != 401 || body["code"] != "unauthorized" {
		t.Errorf("metrics without a token: %d %v", code, body)
	}
	if code, body, _ := call(t, h, "GET", "/metrics", queryTok); code != 403 || body["code"] != "forbidden" {
		t.Errorf("metrics with scope query: %d %v", code, body)
	}
	if code, body, hdr := call(t, h, "POST", "/metrics", adminTok); code != 405 || hdr.Get("Allow") != "GET" {
		t.Errorf("POST /metrics: %d %v", code, body)
	}
	// A write through the store.
	now := time.Now().UTC().Truncate(15 * time.Minute)
	if err := s.EnsurePartitions(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	ml, err := metering.MaLoFromPrefix("1000000000")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(t.Context(), "power", []store.Reading{{
		MaLo: ml.String(), OBIS: "1-1:1.29.0", Commodity: metering.Electricity, From: now, To: now.Add(15 * time.Minute),
		Value: series.Decimal(1000), Unit: metering.KilowattHour, Quality: metering.TrueValue,
		Resolution: metering.QuarterHour, Version: 1, VersionScope: "9900000000003:" + now.Format("2006-01"),
	}}); err != nil {
		t.Fatal(err)
	}

	r := httptest.NewRequest("GET", "/metrics", nil)
	r.Header.Set("Authorization", "Bearer "+adminTok)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	text := w.Body.String()
	if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		t.Fatalf("metrics: %d %q\n%s", w.Code, w.Header().Get("Content-Type"), text)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^meterstore_http_requests_total\{[^}]*method="GET",[^}]*route="/v1/status",status="200"[^}]*\} 1$`),
		regexp.MustCompile(`(?m)^meterstore_http_requests_total\{[^}]*method="GET",[^}]*route="/healthz",status="200"[^}]*\} 1$`),
		regexp.MustCompile(`(?m)^meterstore_http_requests_total\{[^}]*method="GET",[^}]*route="/metrics",status="401"[^}]*\} 1$`),
		regexp.MustCompile(`(?m)^meterstore_http_request_duration_seconds_count\{[^}]*route="/v1/status"[^}]*\} 1$`),
		regexp.MustCompile(`(?m)^meterstore_http_auth_failures_total\{[^}]*reason="missing"[^}]*\} 1$`),
		regexp.MustCompile(`(?m)^meterstore_http_auth_failures_total\{[^}]*reason="forbidden"[^}]*\} 1$`),
		regexp.MustCompile(`(?m)^meterstore_write_rows_total\{[^}]*table="power"[^}]*\} 1$`),
		regexp.MustCompile(`(?m)^go_goroutines `),
	} {
		if !want.MatchString(text) {
			t.Errorf("the exposition has no line matching %s", want)
		}
	}
	if t.Failed() {
		t.Logf("exposition:\n%s", text)
	}
}

package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
	"github.com/meterstore/meterstore/store"
)

// queryHTTP posts a query of sql over table with the bearer token tok and
// the Accept accept ("" for none), and returns the recorded answer.
func queryHTTP(t *testing.T, h http.Handler, ctx context.Context, tok, accept, body string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequestWithContext(ctx, "POST", "/v1/query", strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+tok)
	r.Header.Set("Content-Type", "application/json")
	if accept != "" {
		r.Header.Set("Accept", accept)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// queryBody is the JSON body of a query of sql over table.
func queryBody(table, sql string) string {
	b, _ := json.Marshal(queryRequest{Table: table, SQL: sql})
	return string(b)
}

// TestQuery: rows written through the store come back over POST /v1/query
// as CSV and as JSON lines, rendered as meterstore query renders them,
// with the watermark and the tiers read; and every refusal is the JSON
// error it documents.
func TestQuery(t *testing.T) {
	s := openStore(t)
	now := time.Now().UTC()
	day := now.Truncate(24 * time.Hour)
	if err := s.EnsurePartitions(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	var rows []store.Reading
	for i := range 4 {
		from := day.Add(time.Duration(i) * 15 * time.Minute)
		rows = append(rows, store.Reading{
			MaLo: "20000000008", OBIS: "1-1:1.29.0", Commodity: metering.Electricity, From: from, To: from.Add(15 * time.Minute),
			Value: series.Decimal(1_250_000 * (i + 1)), Unit: metering.KilowattHour, Quality: metering.TrueValue,
			Resolution: metering.QuarterHour, Version: 1, VersionScope: "9900000000003:" + day.Format("2006-01"),
		})
	}
	if _, err := s.Write(t.Context(), "power", rows); err != nil {
		t.Fatal(err)
	}
	reporting, reportingTok := token(t, "reporting", config.ScopeQuery)
	powerOnly, powerTok := token(t, "power-reports", config.ScopeQuery)
	powerOnly.Tables = []string{"power"}
	gasOnly, gasTok := token(t, "gas-reports", config.ScopeQuery)
	gasOnly.Tables = []string{"gas"}
	loader, loaderTok := token(t, "loader", config.ScopeIngest)
	h, err := New(s, Options{Tokens: []config.Token{reporting, powerOnly, gasOnly, loader}})
	if err != nil {
		t.Fatal(err)
	}
	// A repeated column name, a decimal, a timestamp and a date.
	const sql = `SELECT malo_id, "from", value, value * 2 AS value, CAST("from" AS DATE) AS d FROM readings ORDER BY "from"`
	at := func(i int) string { return day.Add(time.Duration(i) * 15 * time.Minute).Format(time.RFC3339) }
	date := day.Format(time.DateOnly)

	w := queryHTTP(t, h, t.Context(), powerTok, "text/csv", queryBody("power", sql))
	wantCSV := "malo_id,from,value,value,d\n"
	for i := range 4 {
		v := 1.25 * float64(i+1)
		wantCSV += fmt.Sprintf("20000000008,%s,%g,%g,%s\n", at(i), v, 2*v, date)
	}
	if w.Code != 200 || w.Body.String() != wantCSV {
		t.Errorf("CSV: %d\n%s\nwant\n%s", w.Code, w.Body, wantCSV)
	}
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") {
		t.Errorf("CSV: Content-Type %q", ct)
	}
	// Nothing is archived: the hot tier alone, no watermark; the header
	// is there, empty.
	if wm, ok := w.Header()["X-Meterstore-Watermark"]; !ok || len(wm) != 1 || wm[0] != "" {
		t.Errorf("X-MeterStore-Watermark: %q (present %v); want empty", wm, ok)
	}
	if tiers := w.Header().Get("X-MeterStore-Tiers"); tiers != "hot" {
		t.Errorf("X-MeterStore-Tiers: %q; want hot", tiers)
	}

	// JSON lines, as asked and by default.
	for _, accept := range []string{"application/x-ndjson", "", "*/*", "application/vnd.apache.arrow.stream, application/x-ndjson;q=0.5"} {
		w := queryHTTP(t, h, t.Context(), reportingTok, accept, queryBody("power", sql))
		if w.Code != 200 || w.Header().Get("Content-Type") != "application/x-ndjson" {
			t.Errorf("Accept %q: %d %q %s", accept, w.Code, w.Header().Get("Content-Type"), w.Body)
			continue
		}
		lines := strings.Split(strings.TrimSuffix(w.Body.String(), "\n"), "\n")
		if len(lines) != 4 {
			t.Errorf("Accept %q: %d lines; want 4:\n%s", accept, len(lines), w.Body)
			continue
		}
		for i, line := range lines {
			v := 1.25 * float64(i+1)
			want := fmt.Sprintf(`{"malo_id":"20000000008","from":%q,"value":"%g","value_2":"%g","d":%q}`, at(i), v, 2*v, date)
			if line != want {
				t.Errorf("Accept %q, line %d:\ngot  %s\nwant %s", accept, i+1, line, want)
			}
		}
	}

	// Refusals, each a JSON error.
	for _, tc := range []struct {
		name, tok, accept, body string
		status                  int
		code                    string
	}{
		{"DELETE", reportingTok, "", queryBody("power", "DELETE FROM readings"), 400, "not_read_only"},
		{"scope ingest", loaderTok, "", queryBody("power", sql), 403, "forbidden"},
		{"token of another table", gasTok, "", queryBody("power", sql), 403, "forbidden"},
		{"token of another table, unknown table", powerTok, "", queryBody("water", sql), 403, "forbidden"},
		{"unknown table", reportingTok, "", queryBody("water", sql), 404, "not_found"},
		{"Arrow", reportingTok, "application/vnd.apache.arrow.stream", queryBody("power", sql), 406, "not_acceptable"},
		{"JSON", reportingTok, "application/json", queryBody("power", sql), 406, "not_acceptable"},
		{"not JSON", reportingTok, "", "table=power", 400, "bad_request"},
		{"no sql", reportingTok, "", `{"table":"power"}`, 400, "bad_request"},
		{"unknown field", reportingTok, "", `{"table":"power","sql":"SELECT 1","format":"csv"}`, 400, "bad_request"},
		{"two objects", reportingTok, "", queryBody("power", sql) + queryBody("power", sql), 400, "bad_request"},
	} {
		w := queryHTTP(t, h, t.Context(), tc.tok, tc.accept, tc.body)
		var out map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %q %q is not a JSON error", tc.name, w.Code, w.Header().Get("Content-Type"), w.Body)
			continue
		}
		if w.Code != tc.status || out["code"] != tc.code || out["error"] == "" {
			t.Errorf("%s: %d %v; want %d %s", tc.name, w.Code, out, tc.status, tc.code)
		}
		if tc.name == "Arrow" && !strings.Contains(fmt.Sprint(out["error"]), "streaming") {
			t.Errorf("Arrow: %q does not say Arrow comes with the streaming engine", out["error"])
		}
	}
	if code, out, hdr := call(t, h, "GET", "/v1/query", reportingTok); code != 405 || hdr.Get("Allow") != "POST" {
		t.Errorf("GET /v1/query: %d %v", code, out)
	}

	// A client gone before the answer cancels the query.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if w := queryHTTP(t, h, ctx, reportingTok, "", queryBody("power", sql)); w.Code != statusClientClosed {
		t.Errorf("a canceled request: %d %s", w.Code, w.Body)
	}
}

// TestQueryFailure: the errors of a query and their answers.
func TestQueryFailure(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("%w: 3 statements", store.ErrNotReadOnly), 400, "not_read_only"},
		{fmt.Errorf("%w: more than 10", store.ErrTooManyRows), 413, "result_too_large"},
		{fmt.Errorf("%w: 2 bytes", store.ErrResultTooLarge), 413, "result_too_large"},
		{fmt.Errorf("%w after 1s: %w", store.ErrQueryTimeout, context.DeadlineExceeded), 504, "timeout"},
		{fmt.Errorf("query: %w", store.ErrInFlight), 503, "unavailable"},
		{fmt.Errorf("binder error"), 500, "internal"},
	} {
		status, code, msg := queryFailure(tc.err)
		if status != tc.status || code != tc.code || msg == "" {
			t.Errorf("%v: %d %s %q; want %d %s", tc.err, status, code, msg, tc.status, tc.code)
		}
	}
}

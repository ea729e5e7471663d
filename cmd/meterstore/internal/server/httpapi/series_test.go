package httpapi

import (
	"bytes"
	"encoding/csv"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/meterstore/meterstore/config"
)

// TestSeriesRoute: GET /v1/tables/{table}/series/{malo_id}/{obis_code}
// answers one series' readings as POST /v1/query answers the same rows,
// in CSV, JSON lines and Arrow, with the same headers; refuses a token
// without the scope or the table before reading, alike for a table with
// rows and one without; and bounds every input.
func TestSeriesRoute(t *testing.T) {
	s := openTables(t, "[[table]]\nname = \"power\"\nresolutions = [\"PT15M\"]\n[[table]]\nname = \"gas\"\nresolutions = [\"PT15M\"]\n")
	day := time.Now().UTC().Truncate(24 * time.Hour)
	if err := s.EnsurePartitions(t.Context(), day); err != nil {
		t.Fatal(err)
	}
	reader, readerTok := token(t, "reader", config.ScopeQuery)
	gasOnly, gasTok := token(t, "gas-reader", config.ScopeQuery)
	gasOnly.Tables = []string{"gas"}
	loader, loaderTok := token(t, "loader", config.ScopeIngest)
	hh, err := New(s, Options{Tokens: []config.Token{reader, gasOnly, loader}})
	if err != nil {
		t.Fatal(err)
	}
	if code, body, _ := post(t, hh, "/v1/tables/power/readings", loaderTok, "text/csv", strings.NewReader(readingsCSV(day, 8, 0))); code != 200 {
		t.Fatalf("ingest: %d %v", code, body)
	}
	path := func(table, malo, rest string) string {
		return "/v1/tables/" + table + "/series/" + malo + "/1-1:1.29.0?from=" + day.Format(time.RFC3339) + "&to=" + day.Add(24*time.Hour).Format(time.RFC3339) + rest
	}
	get := func(p, tok, accept string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", p, nil)
		if tok != "" {
			r.Header.Set("Authorization", "Bearer "+tok)
		}
		if accept != "" {
			r.Header.Set("Accept", accept)
		}
		w := httptest.NewRecorder()
		hh.ServeHTTP(w, r)
		return w
	}

	w := get(path("power", "20000000008", ""), readerTok, "text/csv")
	if w.Code != 200 {
		t.Fatalf("series: %d %s", w.Code, w.Body)
	}
	rows, err := csv.NewReader(w.Body).ReadAll()
	if err != nil || len(rows) != 9 || rows[0][4] != "from" || rows[2][6] != "1.25" {
		t.Fatalf("series as CSV: %v %v", rows, err)
	}
	// The same rows and headers as the query of readings.
	q := `{"table":"power","sql":"SELECT * FROM readings WHERE malo_id = '20000000008' ORDER BY \"from\""}`
	r := httptest.NewRequest("POST", "/v1/query", strings.NewReader(q))
	r.Header.Set("Authorization", "Bearer "+readerTok)
	r.Header.Set("Accept", "text/csv")
	qw := httptest.NewRecorder()
	hh.ServeHTTP(qw, r)
	want, err := csv.NewReader(qw.Body).ReadAll()
	if qw.Code != 200 || err != nil {
		t.Fatalf("query: %d %v", qw.Code, err)
	}
	if got, exp := strings.Join(flatten(rows), "|"), strings.Join(flatten(want), "|"); got != exp {
		t.Errorf("series\n%s\nquery\n%s", got, exp)
	}
	for _, h := range []string{"X-MeterStore-Watermark", "X-MeterStore-Tiers", "X-MeterStore-Mode", "X-MeterStore-Tables"} {
		if w.Header().Get(h) != qw.Header().Get(h) {
			t.Errorf("%s: series %q, query %q", h, w.Header().Get(h), qw.Header().Get(h))
		}
	}
	if w.Header().Get("X-MeterStore-Tiers") != "hot" {
		t.Errorf("tiers %q", w.Header().Get("X-MeterStore-Tiers"))
	}
	if w := get(path("power", "20000000008", ""), readerTok, "application/x-ndjson"); w.Code != 200 || strings.Count(w.Body.String(), "\n") != 8 ||
		!strings.Contains(w.Body.String(), `"value":"1.25"`) {
		t.Errorf("series as JSON lines: %d %s", w.Code, w.Body)
	}
	aw := get(path("power", "20000000008", "&quality=220&mode=operational"), readerTok, mediaArrow)
	rd, err := ipc.NewReader(bytes.NewReader(aw.Body.Bytes()))
	if aw.Code != 200 || err != nil {
		t.Fatalf("series as Arrow: %d %v %s", aw.Code, err, aw.Body)
	}
	n := 0
	for rd.Next() {
		n += int(rd.RecordBatch().NumRows())
	}
	if rd.Err() != nil || n != 8 || aw.Header().Get("X-MeterStore-Mode") != "operational" {
		t.Errorf("series as Arrow: %d rows, %v, mode %q", n, rd.Err(), aw.Header().Get("X-MeterStore-Mode"))
	}
	rd.Release()

	// Refusals before reading: the same for a table with rows and one
	// without.
	for _, c := range []struct {
		name, path, tok string
		status          int
		code            string
	}{
		{"no token", path("power", "20000000008", ""), "", 401, "unauthorized"},
		{"no scope query", path("power", "20000000008", ""), loaderTok, 403, "forbidden"},
		{"another table's token, rows", path("power", "20000000008", ""), gasTok, 403, "forbidden"},
		{"another table's token, none", path("power", "10000000017", ""), gasTok, 403, "forbidden"},
		{"no such table", path("water", "20000000008", ""), readerTok, 404, "not_found"},
		{"a check digit", path("power", "20000000009", ""), readerTok, 422, "invalid_input"},
		{"no OBIS code", strings.Replace(path("power", "20000000008", ""), "1-1:1.29.0", "x", 1), readerTok, 422, "invalid_input"},
		{"a quality that is none", path("power", "20000000008", "&quality=999"), readerTok, 422, "invalid_input"},
		{"no range", "/v1/tables/power/series/20000000008/1-1:1.29.0", readerTok, 400, "bad_request"},
		{"a range of two years", "/v1/tables/power/series/20000000008/1-1:1.29.0?from=2024-01-01T00:00:00Z&to=2026-01-01T00:00:00Z", readerTok, 400, "bad_request"},
		{"an unknown parameter", path("power", "20000000008", "&channel=A"), readerTok, 400, "bad_request"},
		{"from twice", path("power", "20000000008", "&from=2026-01-01T00:00:00Z"), readerTok, 400, "bad_request"},
		{"a mode that is none", path("power", "20000000008", "&mode=fast"), readerTok, 400, "bad_request"},
		{"a long query string", path("power", "20000000008", "&quality="+strings.Repeat("2", 5000)), readerTok, 400, "bad_request"},
		{"nine qualities", path("power", "20000000008", strings.Repeat("&quality=220", 9)), readerTok, 400, "bad_request"},
	} {
		w := get(c.path, c.tok, "")
		if w.Code != c.status || !strings.Contains(w.Body.String(), `"code":"`+c.code+`"`) {
			t.Errorf("%s: %d %s; want %d %s", c.name, w.Code, w.Body, c.status, c.code)
		}
	}
	a := get(path("power", "20000000008", ""), gasTok, "")
	b := get(path("power", "10000000017", ""), gasTok, "")
	if a.Body.String() != b.Body.String() {
		t.Errorf("refusals differ by what the table holds: %s / %s", a.Body, b.Body)
	}
	if w := get(path("power", "20000000008", ""), readerTok, "image/png"); w.Code != http.StatusNotAcceptable {
		t.Errorf("Accept image/png: %d", w.Code)
	}
}

func flatten(rows [][]string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = strings.Join(r, ",")
	}
	return out
}

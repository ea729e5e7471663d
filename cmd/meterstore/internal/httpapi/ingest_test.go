package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/ingest"
	"github.com/meterstore/meterstore/series"
	"github.com/meterstore/meterstore/store"
)

// csvHeader is the header of the deliveries the tests send.
const csvHeader = "sparte,malo_id,obis_code,from,to,value,unit,quality,resolution,version,version_scope\n"

// readingsCSV returns n quarter hours of one market location from start,
// one per line after the header (line 2 on); the line numbered bad (0 for
// none) names a market location whose check digit is wrong.
func readingsCSV(start time.Time, n, bad int) string {
	var b strings.Builder
	b.WriteString(csvHeader)
	for i := range n {
		id := "20000000008"
		if i+2 == bad {
			id = "12345678901"
		}
		from := start.Add(time.Duration(i) * 15 * time.Minute)
		fmt.Fprintf(&b, "STROM,%s,1-1:1.29.0,%s,%s,%d.250,kWh,220,PT15M,1,9900000000003:%s\n",
			id, from.Format(time.RFC3339), from.Add(15*time.Minute).Format(time.RFC3339), i, start.Format("2006-01"))
	}
	return b.String()
}

// post sends body to path with the bearer token tok and the Content-Type
// ct ("" for none) and returns the status, the JSON body and the headers.
func post(t *testing.T, h http.Handler, path, tok, ct string, body io.Reader) (int, map[string]any, http.Header) {
	t.Helper()
	r := httptest.NewRequest("POST", path, body)
	if tok != "" {
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	if ct != "" {
		r.Header.Set("Content-Type", ct)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if got := w.Header().Get("Content-Type"); got != "application/json" {
		t.Errorf("POST %s: Content-Type %q", path, got)
	}
	var out map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		t.Fatalf("POST %s: body %q is not a JSON object: %v", path, w.Body, err)
	}
	return w.Code, out, w.Header()
}

// countRows returns the number of readings of power, through the store's
// query over both tiers.
func countRows(t *testing.T, s *store.Store) string {
	t.Helper()
	res, err := s.Query(t.Context(), "power", "SELECT count(*) FROM readings")
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(res.Rows[0][0])
}

// counts is the four counts of an ingest's answer.
func counts(body map[string]any) string {
	return fmt.Sprintf("inserted=%v present=%v late=%v batches=%v", body["inserted"], body["present"], body["late"], body["batches"])
}

func TestIngest(t *testing.T) {
	s := openStore(t)
	// Today's partition and the week after it; the readings start at
	// midnight UTC, on the same day in Berlin.
	now := time.Now().UTC()
	day := now.Truncate(24 * time.Hour)
	if err := s.EnsurePartitions(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	loader, loaderTok := token(t, "loader", config.ScopeIngest)
	powerOnly, powerTok := token(t, "power-loader", config.ScopeIngest)
	powerOnly.Tables = []string{"power"}
	otherOnly, otherTok := token(t, "gas-loader", config.ScopeIngest)
	otherOnly.Tables = []string{"gas"}
	query, queryTok := token(t, "reporting", config.ScopeQuery)
	hh, err := New(s, Options{Tokens: []config.Token{loader, powerOnly, otherOnly, query}})
	if err != nil {
		t.Fatal(err)
	}
	const path = "/v1/tables/power/readings"

	// A CSV delivery: stored, then found by a query.
	body := readingsCSV(day, 8, 0)
	code, out, _ := post(t, hh, path, loaderTok, "text/csv", strings.NewReader(body))
	if code != 200 || counts(out) != "inserted=8 present=0 late=0 batches=1" {
		t.Fatalf("CSV ingest: %d %v", code, out)
	}
	if n := countRows(t, s); n != "8" {
		t.Errorf("after the ingest the query counts %s readings; want 8", n)
	}
	// The same body again: every reading is present already. A token
	// restricted to the table may write to it.
	code, out, _ = post(t, hh, path, powerTok, "text/csv; charset=utf-8", strings.NewReader(body))
	if code != 200 || counts(out) != "inserted=0 present=8 late=0 batches=1" {
		t.Errorf("the same delivery again: %d %v", code, out)
	}

	// JSON lines, under both media types; a decoding error names its line.
	jl := fmt.Sprintf(`{"sparte":"STROM","malo_id":"20000000008","obis_code":"1-1:1.29.0","from":%q,"to":%q,"value":1.5,"unit":"kWh","quality":"220","resolution":"PT15M","version":1,"version_scope":"9900000000003:%s"}`+"\n",
		day.Add(2*time.Hour).Format(time.RFC3339), day.Add(2*time.Hour+15*time.Minute).Format(time.RFC3339), day.Format("2006-01"))
	for _, ct := range []string{"application/x-ndjson", "application/jsonl"} {
		code, out, _ = post(t, hh, path, loaderTok, ct, strings.NewReader(jl))
		if code != 200 || out["batches"] != 1.0 || out["inserted"].(float64)+out["present"].(float64) != 1 {
			t.Errorf("JSON lines as %s: %d %v", ct, code, out)
		}
	}
	code, out, _ = post(t, hh, path, loaderTok, "application/x-ndjson", strings.NewReader(jl+`{"value": true}`+"\n"))
	if code != 422 || out["code"] != "refused" || out["line"] != 2.0 || out["written_through_line"] != 0.0 {
		t.Errorf("JSON lines with a bad line 2: %d %v", code, out)
	}

	// Batches of 4 lines: the third (lines 10-13) holds a bad line 11, so
	// lines 2-9 are written and nothing of lines 10-13 is.
	hh.(*handler).batchRows = 4
	code, out, _ = post(t, hh, path, loaderTok, "text/csv", strings.NewReader(readingsCSV(day.Add(3*time.Hour), 12, 11)))
	lines, _ := out["lines"].([]any)
	if code != 422 || out["code"] != "refused" || out["line"] != 11.0 || out["written_through_line"] != 9.0 ||
		counts(out) != "inserted=8 present=0 late=0 batches=2" || len(lines) != 1 ||
		!strings.Contains(fmt.Sprint(out["error"]), "lines up to 9 are written") {
		t.Errorf("a bad line 11 in the third batch: %d %v", code, out)
	} else if l := lines[0].(map[string]any); l["line"] != 11.0 || !strings.Contains(fmt.Sprint(l["reason"]), "12345678901") {
		t.Errorf("the bad line: %v", l)
	}
	if n := countRows(t, s); n != "17" {
		t.Errorf("after the refused batch the query counts %s readings; want 8 + 1 + 8", n)
	}
	hh.(*handler).batchRows = 0

	// Refusals before anything is read.
	for _, tc := range []struct {
		name, path, tok, ct string
		status              int
		code                string
	}{
		{"no token", path, "", "text/csv", 401, "unauthorized"},
		{"query scope", path, queryTok, "text/csv", 403, "forbidden"},
		{"token of another table", path, otherTok, "text/csv", 403, "forbidden"},
		{"unknown table", "/v1/tables/water/readings", loaderTok, "text/csv", 404, "not_found"},
		{"JSON", path, loaderTok, "application/json", 415, "unsupported_media_type"},
		{"no Content-Type", path, loaderTok, "", 415, "unsupported_media_type"},
		{"Latin-1", path, loaderTok, "text/csv; charset=iso-8859-1", 415, "unsupported_media_type"},
	} {
		code, out, _ := post(t, hh, tc.path, tc.tok, tc.ct, strings.NewReader(readingsCSV(day.Add(6*time.Hour), 4, 0)))
		if code != tc.status || out["code"] != tc.code || out["error"] == "" {
			t.Errorf("%s: %d %v; want %d %s", tc.name, code, out, tc.status, tc.code)
		}
	}
	if code, out, hdr := call(t, hh, "GET", path, loaderTok); code != 405 || hdr.Get("Allow") != "POST" {
		t.Errorf("GET %s: %d %v", path, code, out)
	}

	// A body past max_body_bytes: 413, and nothing of it written.
	small, err := New(s, Options{Tokens: []config.Token{loader}, MaxBodyBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ = post(t, small, path, loaderTok, "text/csv", strings.NewReader(readingsCSV(day.Add(6*time.Hour), 40, 0)))
	if code != 413 || out["code"] != "too_large" || out["written_through_line"] != 0.0 {
		t.Errorf("a body past max_body_bytes: %d %v", code, out)
	}
	if n := countRows(t, s); n != "17" {
		t.Errorf("after the 413 the query counts %s readings; want 17", n)
	}
}

// TestIngestFailure: what store.IsRetryable calls retryable is a 503, a
// write refused as a whole a 422 naming no line, anything else a 500.
func TestIngestFailure(t *testing.T) {
	batch := func(err error) error { return &ingest.BatchError{FirstLine: 2, LastLine: 5, Err: err} }
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{batch(&series.Error{Kind: series.Unavailable, Err: errors.New("lock timeout")}), 503, "unavailable"},
		{batch(&series.Error{Kind: series.InvalidInput, Err: errors.New("bad")}), 422, "refused"},
		{batch(&series.Error{Kind: series.Internal, Err: errors.New("bug")}), 500, "internal"},
		{&http.MaxBytesError{Limit: 10}, 413, "too_large"},
		{io.ErrUnexpectedEOF, 400, "bad_request"},
	} {
		status, body := ingestFailure(tc.err)
		if status != tc.status || body.Code != tc.code || body.Error == "" {
			t.Errorf("%v: %d %+v; want %d %s", tc.err, status, body, tc.status, tc.code)
		}
	}
}

package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/idempotency"
	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/ingest"
	"github.com/meterstore/meterstore/internal/pgtest"
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
func post(t testing.TB, h http.Handler, path, tok, ct string, body io.Reader) (int, map[string]any, http.Header) {
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

// openStoreAt opens the deployment of openStore on the database db with
// its warehouse in dir, as a process started again on them would.
func openStoreAt(t *testing.T, db, dir string) *store.Store {
	t.Helper()
	src := fmt.Sprintf("[postgres]\nurl = %q\ndata_dir = %q\n[warehouse]\nurl = %q\n[[table]]\nname = \"power\"\nresolutions = [\"PT15M\"]\n",
		db, dir, "file://"+filepath.Join(dir, "wh"))
	cfg, err := config.Parse([]byte(src), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.OpenConfig(t.Context(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// testClock is a clock the test moves.
type testClock struct{ ns atomic.Int64 }

func (c *testClock) Now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *testClock) Set(t time.Time)         { c.ns.Store(t.UnixNano()) }
func (c *testClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// answer is a recorded answer to a request.
type keyedAnswer struct {
	code int
	body string
	hdr  http.Header
}

// json decodes the answer's body, which must be a JSON object.
func (a keyedAnswer) json(t *testing.T) map[string]any {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal([]byte(a.body), &out); err != nil {
		t.Fatalf("answer %d %q is not a JSON object: %v", a.code, a.body, err)
	}
	return out
}

// postKeyed posts a CSV delivery to power with the bearer token tok and
// the Idempotency-Key keys (none if empty).
func postKeyed(h http.Handler, tok string, body io.Reader, keys ...string) keyedAnswer {
	w := postKeyedRecorded(h, tok, body, keys...)
	return keyedAnswer{w.Code, w.Body.String(), w.Header()}
}

// postKeyedRecorded is postKeyed, answering with the recorder.
func postKeyedRecorded(h http.Handler, tok string, body io.Reader, keys ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", "/v1/tables/power/readings", body)
	r.Header.Set("Authorization", "Bearer "+tok)
	r.Header.Set("Content-Type", "text/csv")
	for _, k := range keys {
		r.Header.Add("Idempotency-Key", k)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestIngestIdempotency: a retry with the same key and body gets the
// first answer without being run, on this handler or one on a store
// opened again on the same database; another body under the key is 422;
// a key in flight is 409; an answer that is not final leaves the key to be
// retried; a record past retention is forgotten and pruned.
func TestIngestIdempotency(t *testing.T) {
	db, dir := pgtest.NewDB(t), t.TempDir()
	s := openStoreAt(t, db, dir)
	now := time.Now().UTC()
	day := now.Truncate(24 * time.Hour)
	if err := s.EnsurePartitions(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	var clock testClock
	clock.Set(now)
	loader, loaderTok := token(t, "loader", config.ScopeIngest)
	other, otherTok := token(t, "other-loader", config.ScopeIngest)
	opts := Options{Tokens: []config.Token{loader, other}, Clock: clock.Now, IdempotencyRetention: time.Hour}
	hh, err := New(s, opts)
	if err != nil {
		t.Fatal(err)
	}

	// The first delivery under k-1 inserts 8 readings; its retry is told
	// so again (run again, it would find all 8 present), marked replayed.
	body := readingsCSV(day, 8, 0)
	first := postKeyed(hh, loaderTok, strings.NewReader(body), "k-1")
	if first.code != 200 || counts(first.json(t)) != "inserted=8 present=0 late=0 batches=1" || first.hdr.Get(replayedHeader) != "" {
		t.Fatalf("first delivery: %+v", first)
	}
	again := postKeyed(hh, loaderTok, strings.NewReader(body), "k-1")
	if again.code != first.code || again.body != first.body || again.hdr.Get(replayedHeader) != "true" ||
		again.hdr.Get("Content-Type") != "application/json" {
		t.Errorf("retry under k-1: %+v; want the first answer %q, replayed", again, first.body)
	}
	if rerun := postKeyed(hh, loaderTok, strings.NewReader(body)); counts(rerun.json(t)) != "inserted=0 present=8 late=0 batches=1" {
		t.Errorf("the delivery without a key: %+v; want it run again", rerun)
	}
	// Another token's k-1 is its own key.
	if a := postKeyed(hh, otherTok, strings.NewReader(body), "k-1"); a.code != 200 || a.hdr.Get(replayedHeader) != "" ||
		counts(a.json(t)) != "inserted=0 present=8 late=0 batches=1" {
		t.Errorf("another token's k-1: %+v; want it run", a)
	}

	// Another body under k-1: 422, and nothing of it written.
	reused := postKeyed(hh, loaderTok, strings.NewReader(readingsCSV(day.Add(4*time.Hour), 4, 0)), "k-1")
	if out := reused.json(t); reused.code != 422 || out["code"] != "idempotency_key_reused" || !strings.Contains(fmt.Sprint(out["error"]), `"k-1"`) {
		t.Errorf("another body under k-1: %+v", reused)
	}
	if n := countRows(t, s); n != "8" {
		t.Errorf("after the reused key the query counts %s readings; want 8", n)
	}

	// A refused batch is final: its 422 is answered again, byte for byte.
	bad := readingsCSV(day.Add(4*time.Hour), 4, 3)
	refused := postKeyed(hh, loaderTok, strings.NewReader(bad), "k-bad")
	if out := refused.json(t); refused.code != 422 || out["code"] != "refused" || out["line"] != 3.0 {
		t.Fatalf("a bad line 3 under k-bad: %+v", refused)
	}
	if a := postKeyed(hh, loaderTok, strings.NewReader(bad), "k-bad"); a.code != 422 || a.body != refused.body || a.hdr.Get(replayedHeader) != "true" {
		t.Errorf("retry under k-bad: %+v; want %q", a, refused.body)
	}

	// Malformed keys: 400, before anything is read or written.
	for _, keys := range [][]string{{""}, {strings.Repeat("k", 256)}, {"a key"}, {"schlüssel"}, {"tab\tkey"}, {"k-2", "k-3"}} {
		a := postKeyed(hh, loaderTok, strings.NewReader(readingsCSV(day.Add(5*time.Hour), 4, 0)), keys...)
		if out := a.json(t); a.code != 400 || out["code"] != "bad_request" || !strings.Contains(fmt.Sprint(out["error"]), "Idempotency-Key") {
			t.Errorf("key %q: %+v", keys, a)
		}
	}
	if a := postKeyed(hh, loaderTok, strings.NewReader(body), strings.Repeat("~", 255)); a.code != 200 {
		t.Errorf("a key of 255 visible characters: %+v", a)
	}
	if n := countRows(t, s); n != "8" {
		t.Errorf("after the malformed keys the query counts %s readings; want 8", n)
	}

	// A request whose body is held open holds its key: another with the
	// key is 409 meanwhile; the first then ends and its answer is kept.
	pipeBody := readingsCSV(day.Add(6*time.Hour), 4, 0)
	pr, pw := io.Pipe()
	held := make(chan keyedAnswer, 1)
	go func() { held <- postKeyed(hh, loaderTok, pr, "k-pipe") }()
	// The handler claims the key before it reads; once the header is
	// read, the claim is made.
	if _, err := pw.Write([]byte(csvHeader)); err != nil {
		t.Fatal(err)
	}
	inFlight := postKeyed(hh, loaderTok, strings.NewReader(pipeBody), "k-pipe")
	if out := inFlight.json(t); inFlight.code != 409 || out["code"] != "in_flight" || inFlight.hdr.Get("Retry-After") == "" {
		t.Errorf("k-pipe while it is in flight: %+v", inFlight)
	}
	pw.Write([]byte(pipeBody[len(csvHeader):]))
	pw.Close()
	pipeFirst := <-held
	if pipeFirst.code != 200 || counts(pipeFirst.json(t)) != "inserted=4 present=0 late=0 batches=1" {
		t.Fatalf("k-pipe: %+v", pipeFirst)
	}
	if a := postKeyed(hh, loaderTok, strings.NewReader(pipeBody), "k-pipe"); a.body != pipeFirst.body || a.hdr.Get(replayedHeader) != "true" {
		t.Errorf("retry under k-pipe: %+v; want %q", a, pipeFirst.body)
	}

	// A body broken off mid-stream is not final: the key is released and
	// its retry runs.
	broken := readingsCSV(day.Add(7*time.Hour), 4, 0)
	pr, pw = io.Pipe()
	go func() { held <- postKeyed(hh, loaderTok, pr, "k-broken") }()
	pw.Write([]byte(broken[:len(csvHeader)+20]))
	pw.CloseWithError(io.ErrUnexpectedEOF)
	if a := <-held; a.code != 400 {
		t.Errorf("a body broken off: %+v; want 400", a)
	}
	if a := postKeyed(hh, loaderTok, strings.NewReader(broken), "k-broken"); a.code != 200 || a.hdr.Get(replayedHeader) != "" ||
		counts(a.json(t)) != "inserted=4 present=0 late=0 batches=1" {
		t.Errorf("retry of the broken body: %+v; want it run", a)
	}
	// So is a body past max_body_bytes (413).
	small, err := New(s, Options{Tokens: []config.Token{loader}, Clock: clock.Now, MaxBodyBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	if a := postKeyed(small, loaderTok, strings.NewReader(readingsCSV(day.Add(8*time.Hour), 40, 0)), "k-big"); a.code != 413 {
		t.Errorf("a body past max_body_bytes: %+v", a)
	}
	if a := postKeyed(small, loaderTok, strings.NewReader(readingsCSV(day.Add(8*time.Hour), 2, 0)), "k-big"); a.code != 200 || a.hdr.Get(replayedHeader) != "" {
		t.Errorf("k-big after the 413, with a smaller body: %+v; want it run", a)
	}

	// Past the retention of an hour, k-1 is forgotten: another body under
	// it runs, and the records of an hour ago are pruned as it is
	// recorded.
	clock.Advance(time.Hour + 2*pruneEvery)
	later := readingsCSV(day.Add(9*time.Hour), 4, 0)
	if a := postKeyed(hh, loaderTok, strings.NewReader(later), "k-1"); a.code != 200 || counts(a.json(t)) != "inserted=4 present=0 late=0 batches=1" {
		t.Errorf("another body under k-1 past retention: %+v; want it run", a)
	}
	if n, err := idempotency.New(s.ServiceDB()).Prune(t.Context(), clock.Now().Add(-time.Hour)); err != nil || n != 0 {
		t.Errorf("records past retention left: %d %v; want the handler to have pruned them", n, err)
	}
	if a := postKeyed(hh, loaderTok, strings.NewReader(bad), "k-bad"); a.code != 422 || a.hdr.Get(replayedHeader) != "" {
		t.Errorf("k-bad past retention: %+v; want it run", a)
	}

	// The record survives the process: a handler on a store opened again
	// on the database answers k-1 from it.
	s2 := openStoreAt(t, db, dir)
	h2, err := New(s2, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := postKeyed(hh, loaderTok, strings.NewReader(later), "k-1")
	if a := postKeyed(h2, loaderTok, strings.NewReader(later), "k-1"); a.code != 200 || a.body != want.body || a.hdr.Get(replayedHeader) != "true" ||
		counts(a.json(t)) != "inserted=4 present=0 late=0 batches=1" {
		t.Errorf("k-1 after a restart: %+v; want %q", a, want.body)
	}
}

// TestConcurrencyLimit: with max_concurrent_requests = 2, two ingests
// held open leave the third one 503 at once, with Retry-After, while
// queries and health checks are not counted against them; once they end,
// ingests are served again.
func TestConcurrencyLimit(t *testing.T) {
	s := openStore(t)
	now := time.Now().UTC()
	day := now.Truncate(24 * time.Hour)
	if err := s.EnsurePartitions(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	loader, loaderTok := token(t, "loader", config.ScopeIngest)
	reader, readerTok := token(t, "reporting", config.ScopeQuery)
	hh, err := New(s, Options{Tokens: []config.Token{loader, reader}, MaxConcurrentRequests: 2})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2
	var (
		pipes []*io.PipeWriter
		held  = make(chan keyedAnswer, n)
	)
	for i := range n {
		pr, pw := io.Pipe()
		pipes = append(pipes, pw)
		go func() { held <- postKeyed(hh, loaderTok, pr) }()
		// Read by the handler, so it holds its slot.
		if _, err := pw.Write([]byte(readingsCSV(day.Add(time.Duration(i)*time.Hour), 1, 0))); err != nil {
			t.Fatal(err)
		}
	}
	over := postKeyed(hh, loaderTok, strings.NewReader(readingsCSV(day.Add(5*time.Hour), 1, 0)))
	if out := over.json(t); over.code != 503 || out["code"] != "overloaded" || over.hdr.Get("Retry-After") != "1" {
		t.Errorf("a third ingest: %+v", over)
	}
	if code, _, _ := call(t, hh, "GET", "/healthz", ""); code != 200 {
		t.Errorf("healthz while ingests are at the limit: %d", code)
	}
	r := httptest.NewRequest("POST", "/v1/query", strings.NewReader(`{"table":"power","sql":"SELECT count(*) FROM readings"}`))
	r.Header.Set("Authorization", "Bearer "+readerTok)
	w := httptest.NewRecorder()
	hh.ServeHTTP(w, r)
	if w.Code != 200 {
		t.Errorf("a query while ingests are at the limit: %d %s", w.Code, w.Body)
	}
	for _, pw := range pipes {
		pw.Close()
	}
	for range n {
		if a := <-held; a.code != 200 || counts(a.json(t)) != "inserted=1 present=0 late=0 batches=1" {
			t.Errorf("a held ingest: %+v", a)
		}
	}
	if a := postKeyed(hh, loaderTok, strings.NewReader(readingsCSV(day.Add(5*time.Hour), 1, 0))); a.code != 200 {
		t.Errorf("an ingest after the held ones ended: %+v", a)
	}
}

// TestOpenAPIIdempotency holds the answers of keyed and of refused
// ingests to openapi.yaml: replayed 200 and 422, 409 in flight, 422 of a
// reused key, 400 of a malformed key and 503 overloaded.
func TestOpenAPIIdempotency(t *testing.T) {
	d := parseOpenAPI(t)
	s := openStore(t)
	now := time.Now().UTC()
	day := now.Truncate(24 * time.Hour)
	if err := s.EnsurePartitions(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	loader, loaderTok := token(t, "loader", config.ScopeIngest)
	hh, err := New(s, Options{Tokens: []config.Token{loader}, MaxConcurrentRequests: 1})
	if err != nil {
		t.Fatal(err)
	}
	good, bad := readingsCSV(day, 4, 0), readingsCSV(day.Add(time.Hour), 4, 3)
	check := func(name string, status int, w *httptest.ResponseRecorder) {
		t.Helper()
		if w.Code != status {
			t.Errorf("%s: %d %s; want %d", name, w.Code, w.Body, status)
		}
		d.conforms(t, "POST", ingestPath, w)
	}
	for range 2 { // run, then replayed
		check("keyed ingest", 200, postKeyedRecorded(hh, loaderTok, strings.NewReader(good), "good"))
		check("keyed ingest of a bad line", 422, postKeyedRecorded(hh, loaderTok, strings.NewReader(bad), "bad"))
	}
	check("reused key", 422, postKeyedRecorded(hh, loaderTok, strings.NewReader(bad), "good"))
	check("malformed key", 400, postKeyedRecorded(hh, loaderTok, strings.NewReader(good), "a b"))

	pr, pw := io.Pipe()
	held := make(chan keyedAnswer, 1)
	go func() { held <- postKeyed(hh, loaderTok, pr, "held") }()
	if _, err := pw.Write([]byte(csvHeader)); err != nil {
		t.Fatal(err)
	}
	check("overloaded", 503, postKeyedRecorded(hh, loaderTok, strings.NewReader(good), "held"))
	// Unbounded, the same request meets the key in flight.
	unbounded, err := New(s, Options{Tokens: []config.Token{loader}})
	if err != nil {
		t.Fatal(err)
	}
	check("in flight", 409, postKeyedRecorded(unbounded, loaderTok, strings.NewReader(good), "held"))
	pw.Close()
	if a := <-held; a.code != 200 {
		t.Errorf("the held request: %+v", a)
	}
}

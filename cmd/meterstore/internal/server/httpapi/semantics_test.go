package httpapi

// The HTTP semantics of the API over a store held in memory (memStore)
// and idempotency records held in memory (memRecords): status codes,
// content negotiation, body limits and idempotent replay, decided by the
// handler alone. The end-to-end tests beside them run the same routes
// over a real store.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/idempotency"
	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
	"github.com/meterstore/meterstore/store"
)

// memStore is a Store of one declared table, power, that keeps what is
// written and answers every statement with stmt (or fails it with
// prepareErr).
type memStore struct {
	mu         sync.Mutex
	written    []store.Reading
	writes     int
	prepareErr error
	stmt       memStatement
	// prepared records the options of the last Prepare.
	prepared store.StatementOptions
	// held, if set, answers every statement instead of stmt, but for
	// the text point.
	held  *heldStatement
	point string
}

var memPower = series.Table{Name: "power", TimeModel: series.Interval, Commodity: metering.Electricity,
	Resolutions: []metering.Resolution{metering.QuarterHour}, Width: series.Daily}

func (m *memStore) Declaration(name string) (store.Table, error) {
	if name != memPower.Name {
		return store.Table{}, fmt.Errorf("table %q: %w", name, store.ErrNoTable)
	}
	return memPower, nil
}

func (m *memStore) Ping(context.Context) error { return nil }

func (m *memStore) Status(context.Context, time.Time) []store.TableStatus {
	return []store.TableStatus{{Table: memPower.Name, Healthy: true}}
}

func (m *memStore) WriteWith(_ context.Context, _ string, rows []store.Reading, _ store.WriteOptions) (store.WriteResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writes++
	m.written = append(m.written, rows...)
	st := make([]series.Status, len(rows))
	for i := range st {
		st[i] = series.Inserted
	}
	return store.WriteResult{Result: series.Result{Status: st, Inserted: len(rows)}}, nil
}

// WriteEach writes the batches one after another with WriteWith.
func (m *memStore) WriteEach(ctx context.Context, table string, next func() ([]store.Reading, error), done func(store.WriteResult, error) error, o store.WriteOptions) error {
	for {
		rows, err := next()
		if err != nil || len(rows) == 0 {
			return err
		}
		if err := done(m.WriteWith(ctx, table, rows, o)); err != nil {
			return err
		}
	}
}

func (m *memStore) Prepare(_ context.Context, text string, o store.StatementOptions) (Statement, error) {
	m.mu.Lock()
	m.prepared = o
	m.mu.Unlock()
	// A statement reading power is refused to a token that may not: the
	// front door's check, which the handler relies on.
	if o.May != nil && !o.May(memPower.Name) {
		return nil, &store.ForbiddenError{Tables: []string{memPower.Name}}
	}
	if m.prepareErr != nil {
		return nil, m.prepareErr
	}
	if m.held != nil && text != m.point {
		m.held.prepared <- struct{}{}
		return m.held, nil
	}
	return m.stmt, nil
}

// memStatement answers with its columns and rows, or fails after them
// with err.
type memStatement struct {
	columns, types []string
	rows           [][]any
	err            error
	small          bool
}

func (s memStatement) Small() bool { return s.small }

func (s memStatement) Stream(_ context.Context, begin func(*store.ResultHeader) error, row func([]any) error) error {
	if err := begin(&store.ResultHeader{Columns: s.columns, Types: s.types, Tiers: []string{"hot"}}); err != nil {
		return err
	}
	for _, r := range s.rows {
		if err := row(r); err != nil {
			return err
		}
	}
	return s.err
}

// memRecords are idempotency records in memory, with the semantics of
// package idempotency: a pending claim refuses another, a completed one
// answers with its outcome.
type memRecords struct {
	mu      sync.Mutex
	pending map[idempotency.Key]bool
	done    map[idempotency.Key]idempotency.Outcome
}

func newMemRecords() *memRecords {
	return &memRecords{pending: map[idempotency.Key]bool{}, done: map[idempotency.Key]idempotency.Outcome{}}
}

func (r *memRecords) Claim(_ context.Context, k idempotency.Key, _ time.Time, _, _ time.Duration) (claim, *idempotency.Outcome, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if o, ok := r.done[k]; ok {
		return nil, &o, nil
	}
	if r.pending[k] {
		return nil, nil, idempotency.ErrInFlight
	}
	r.pending[k] = true
	return &memClaim{r: r, k: k}, nil, nil
}

func (r *memRecords) Prune(context.Context, time.Time) (int64, error) { return 0, nil }

type memClaim struct {
	r *memRecords
	k idempotency.Key
}

func (c *memClaim) Extend(context.Context, time.Time) error { return nil }

func (c *memClaim) Complete(_ context.Context, o idempotency.Outcome) error {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	delete(c.r.pending, c.k)
	c.r.done[c.k] = o
	return nil
}

func (c *memClaim) Release(context.Context) error {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	delete(c.r.pending, c.k)
	return nil
}

// memHandler returns the API over s and recs, without a catalog or a
// dashboard.
func memHandler(t *testing.T, s *memStore, recs records, o Options) http.Handler {
	t.Helper()
	h, err := newHandler(s, services{records: recs}, o)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// postQuery sends the query body with the bearer tok and the Accept
// headers accept.
func postQuery(h http.Handler, tok, body string, accept ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", "/v1/query", strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+tok)
	for _, a := range accept {
		r.Header.Add("Accept", a)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestQueryFailureStatus: each kind of failure the front door reports is
// answered with its status and code, an internal one without its text.
func TestQueryFailureStatus(t *testing.T) {
	reader, readerTok := token(t, "reporting", config.ScopeQuery)
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("parse: %w", store.ErrInvalidQuery), 400, "invalid_query"},
		{fmt.Errorf("delete: %w", store.ErrNotReadOnly), 400, "not_read_only"},
		{fmt.Errorf("read_csv: %w", store.ErrNotPermitted), 403, "not_permitted"},
		{fmt.Errorf("gas: %w", store.ErrNoTable), 404, "not_found"},
		{fmt.Errorf("run: %w", store.ErrQueryTimeout), 504, "timeout"},
		{fmt.Errorf("run: %w", store.ErrMemoryLimit), 422, "memory_limit"},
		{fmt.Errorf("run: %w", store.ErrTooManyRows), 422, "too_large"},
		{fmt.Errorf("scan: %w", context.DeadlineExceeded), 503, "unavailable"},
		{errors.New("secret detail of a broken invariant"), 500, "internal"},
	} {
		s := &memStore{prepareErr: tc.err}
		h := memHandler(t, s, newMemRecords(), Options{Tokens: []config.Token{reader}})
		w := postQuery(h, readerTok, `{"sql": "SELECT 1"}`)
		body := decode(t, w)
		if w.Code != tc.status || body["code"] != tc.code {
			t.Errorf("%v: %d %v; want %d %s", tc.err, w.Code, body, tc.status, tc.code)
		}
		if tc.status == 503 && w.Header().Get("Retry-After") == "" {
			t.Errorf("%v: 503 without Retry-After", tc.err)
		}
		if tc.status == 500 && strings.Contains(w.Body.String(), "secret") {
			t.Errorf("an internal error's text is answered: %s", w.Body)
		}
	}
}

// TestQueryForbiddenLooksTheSame: a token limited to another table is
// refused alike whether the statement fails or would succeed, and the
// handler hands the front door the token's permission before anything
// is read.
func TestQueryForbiddenLooksTheSame(t *testing.T) {
	gasOnly, gasTok := token(t, "gas-reader", config.ScopeQuery)
	gasOnly.Tables = []string{"gas"}
	var bodies []string
	for _, err := range []error{nil, fmt.Errorf("bind: %w", store.ErrInvalidQuery)} {
		s := &memStore{prepareErr: err, stmt: memStatement{columns: []string{"n"}, types: []string{"BIGINT"}, rows: [][]any{{int64(1)}}}}
		h := memHandler(t, s, newMemRecords(), Options{Tokens: []config.Token{gasOnly}})
		w := postQuery(h, gasTok, `{"sql": "SELECT count(*) FROM power.readings"}`)
		if w.Code != 403 {
			t.Errorf("prepare error %v: %d %s; want 403", err, w.Code, w.Body)
		}
		bodies = append(bodies, w.Body.String())
	}
	if bodies[0] != bodies[1] {
		t.Errorf("refusals differ with what the statement would do:\n%s\n%s", bodies[0], bodies[1])
	}
}

// TestQueryNegotiation: the answer takes the media type the Accept
// header prefers among CSV, JSON lines and Arrow; none of them is 406.
func TestQueryNegotiation(t *testing.T) {
	reader, readerTok := token(t, "reporting", config.ScopeQuery)
	s := &memStore{stmt: memStatement{columns: []string{"malo_id", "n"}, types: []string{"VARCHAR", "BIGINT"},
		rows: [][]any{{"51238696781", int64(3)}}}}
	h := memHandler(t, s, newMemRecords(), Options{Tokens: []config.Token{reader}})
	for _, tc := range []struct {
		accept []string
		status int
		ctype  string
		body   string // a part of the body
	}{
		{nil, 200, mediaNDJSON, `"malo_id":"51238696781"`},
		{[]string{"text/csv"}, 200, "text/csv; charset=utf-8; header=present", "malo_id,n\n51238696781,3\n"},
		{[]string{"application/json;q=0.2, text/csv;q=0.9"}, 200, "text/csv; charset=utf-8; header=present", "malo_id,n"},
		{[]string{mediaArrow}, 200, mediaArrow, ""},
		{[]string{"image/png"}, 406, "application/json", `"not_acceptable"`},
	} {
		w := postQuery(h, readerTok, `{"sql": "SELECT malo_id, n FROM readings"}`, tc.accept...)
		if w.Code != tc.status || w.Header().Get("Content-Type") != tc.ctype || !strings.Contains(w.Body.String(), tc.body) {
			t.Errorf("Accept %q: %d %q %q; want %d %q containing %q", tc.accept, w.Code, w.Header().Get("Content-Type"), w.Body, tc.status, tc.ctype, tc.body)
		}
	}
	if w := postQuery(h, readerTok, `{"sql": "SELECT 1", "table": "power"}`); w.Code != 200 || s.prepared.Table != "power" {
		t.Errorf("a query naming its table: %d, prepared with table %q", w.Code, s.prepared.Table)
	}
	if w := postQuery(h, readerTok, `{"sql": "SELECT 1", "table": "gas"}`); w.Code != 404 {
		t.Errorf("a query naming an undeclared table: %d %s; want 404", w.Code, w.Body)
	}
}

// TestBodyTooLarge: a query or a delivery past server.max_body_bytes is
// 413, and nothing of the delivery is written.
func TestBodyTooLarge(t *testing.T) {
	reader, readerTok := token(t, "reporting", config.ScopeQuery)
	loader, loaderTok := token(t, "loader", config.ScopeIngest)
	s := &memStore{}
	h := memHandler(t, s, newMemRecords(), Options{Tokens: []config.Token{reader, loader}, MaxBodyBytes: 256})
	w := postQuery(h, readerTok, `{"sql": "SELECT '`+strings.Repeat("x", 300)+`'"}`)
	if body := decode(t, w); w.Code != 413 || body["code"] != "too_large" {
		t.Errorf("a query past the bound: %d %v", w.Code, body)
	}
	day := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	a := postKeyed(h, loaderTok, strings.NewReader(readingsCSV(day, 8, 0)))
	if a.code != 413 || !strings.Contains(a.body, `"too_large"`) {
		t.Errorf("a delivery past the bound: %+v", a)
	}
	if s.writes != 0 {
		t.Errorf("%d writes of a delivery past the bound; want none", s.writes)
	}
	if a := postKeyed(h, loaderTok, strings.NewReader(readingsCSV(day, 1, 0))); a.code != 200 || s.writes != 1 {
		t.Errorf("a delivery within the bound: %+v, %d writes", a, s.writes)
	}
}

// TestIdempotentReplay: a retry under the same key and body is answered
// with the first answer, marked replayed, without a write; another body
// under the key is 422; a key whose request is in flight is 409.
func TestIdempotentReplay(t *testing.T) {
	loader, loaderTok := token(t, "loader", config.ScopeIngest)
	s, recs := &memStore{}, newMemRecords()
	h := memHandler(t, s, recs, Options{Tokens: []config.Token{loader}})
	day := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	body := readingsCSV(day, 8, 0)

	first := postKeyed(h, loaderTok, strings.NewReader(body), "k-1")
	if first.code != 200 || first.hdr.Get(replayedHeader) != "" || s.writes != 1 {
		t.Fatalf("first delivery: %+v, %d writes", first, s.writes)
	}
	again := postKeyed(h, loaderTok, strings.NewReader(body), "k-1")
	if again.code != 200 || again.body != first.body || again.hdr.Get(replayedHeader) != "true" {
		t.Errorf("retry: %+v; want %q replayed", again, first.body)
	}
	if s.writes != 1 {
		t.Errorf("the retry wrote: %d writes", s.writes)
	}
	other := postKeyed(h, loaderTok, strings.NewReader(readingsCSV(day.Add(time.Hour), 4, 0)), "k-1")
	if other.code != 422 || !strings.Contains(other.body, `"idempotency_key_reused"`) || s.writes != 1 {
		t.Errorf("another body under k-1: %+v, %d writes", other, s.writes)
	}
	// A key whose record is pending: its request runs elsewhere.
	recs.pending[idempotency.Key{Token: "loader", Key: "k-2", Table: "power"}] = true
	busy := postKeyed(h, loaderTok, strings.NewReader(body), "k-2")
	if busy.code != 409 || busy.hdr.Get("Retry-After") == "" || s.writes != 1 {
		t.Errorf("a key in flight: %+v, %d writes", busy, s.writes)
	}
	// Two keys, or one out of range, are refused before anything runs.
	for _, keys := range [][]string{{"a", "b"}, {strings.Repeat("k", 300)}, {"k 3"}} {
		if a := postKeyed(h, loaderTok, strings.NewReader(body), keys...); a.code != 400 || s.writes != 1 {
			t.Errorf("keys %q: %+v, %d writes", keys, a, s.writes)
		}
	}
}

// decode decodes w's JSON object body, failing the test otherwise.
func decode(t *testing.T, w *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	a := keyedAnswer{w.Code, w.Body.String(), w.Header()}
	return a.json(t)
}

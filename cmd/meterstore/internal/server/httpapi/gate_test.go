package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/store"
)

// heldStatement is a statement that runs until the test releases it,
// counting the statements that began running and the most running at
// once. Prepare tells prepared of each statement it hands out.
type heldStatement struct {
	prepared chan struct{}
	running  chan struct{} // told when a statement begins running
	release  chan struct{} // one receive ends one running statement

	mu                     sync.Mutex
	began, now, mostAtOnce int
}

func newHeldStatement() *heldStatement {
	return &heldStatement{prepared: make(chan struct{}, 16), running: make(chan struct{}, 16), release: make(chan struct{})}
}

func (s *heldStatement) Stream(ctx context.Context, begin func(*store.ResultHeader) error, row func([]any) error) error {
	s.mu.Lock()
	s.began++
	s.now++
	s.mostAtOnce = max(s.mostAtOnce, s.now)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.now--
		s.mu.Unlock()
	}()
	s.running <- struct{}{}
	select {
	case <-s.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := begin(&store.ResultHeader{Columns: []string{"n"}, Types: []string{"BIGINT"}, Tiers: []string{"hot"}}); err != nil {
		return err
	}
	return row([]any{int64(1)})
}

// Small is false: a held statement stands for a scan, which waits its
// turn.
func (s *heldStatement) Small() bool { return false }

// counts returns how many statements began running and the most that
// ran at once.
func (s *heldStatement) counts() (began, mostAtOnce int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.began, s.mostAtOnce
}

// TestRunningQueries: with max_running_queries = 1 and
// max_concurrent_requests = 3, of three queries in flight one runs and
// two wait their turn; a fourth is answered 503 overloaded at once; an
// ingest is served while they hold every query slot, never queued
// behind them; a waiting query whose client goes away leaves the line
// without having run; the others run one at a time, in turn.
func TestRunningQueries(t *testing.T) {
	both, tok := token(t, "both", config.ScopeIngest, config.ScopeQuery)
	held := newHeldStatement()
	s := &memStore{held: held}
	h := memHandler(t, s, newMemRecords(), Options{Tokens: []config.Token{both}, MaxConcurrentRequests: 3, MaxRunningQueries: 1})
	query := func(ctx context.Context) <-chan int {
		code := make(chan int, 1)
		go func() {
			r := httptest.NewRequestWithContext(ctx, "POST", "/v1/query", strings.NewReader(`{"sql": "SELECT 1"}`))
			r.Header.Set("Authorization", "Bearer "+tok)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			code <- w.Code
		}()
		return code
	}

	first := query(t.Context())
	<-held.prepared
	<-held.running
	second := query(t.Context())
	gone, leave := context.WithCancel(t.Context())
	third := query(gone)
	<-held.prepared
	<-held.prepared
	// Three in flight, as many as allowed: one more is refused at once.
	if w := postQuery(h, tok, `{"sql": "SELECT 1"}`); w.Code != 503 || decode(t, w)["code"] != "overloaded" {
		t.Errorf("a fourth query: %d %s; want 503 overloaded", w.Code, w.Body)
	}
	// Ingests have slots of their own and never wait for a query.
	day := time.Now().UTC().Truncate(24 * time.Hour)
	if a := postKeyed(h, tok, strings.NewReader(readingsCSV(day, 4, 0))); a.code != 200 || counts(a.json(t)) != "inserted=4 present=0 late=0 batches=1" {
		t.Errorf("an ingest beside the queries: %+v", a)
	}
	// Prepared but waiting: its client goes away, and it never runs.
	leave()
	if code := <-third; code != statusClientClosed {
		t.Errorf("a waiting query whose client went away: %d; want %d", code, statusClientClosed)
	}
	if began, _ := held.counts(); began != 1 {
		t.Fatalf("%d queries began running with one allowed", began)
	}
	held.release <- struct{}{}
	if code := <-first; code != 200 {
		t.Errorf("the first query: %d", code)
	}
	<-held.running
	held.release <- struct{}{}
	if code := <-second; code != 200 {
		t.Errorf("the second query: %d", code)
	}
	if began, most := held.counts(); began != 2 || most != 1 {
		t.Errorf("%d queries ran, at most %d at once; want 2, one at a time", began, most)
	}
	if n := len(h.(*handler).querySlots); n != 0 {
		t.Errorf("%d query slots held after every query ended", n)
	}
}

// TestSmallQueriesDoNotWait: with max_running_queries = 1 held by a
// large statement and another large one waiting its turn, a small
// statement is answered at once, its rows whole, while every slot stays
// held. The probe is a client that has already gone away: a statement
// that waits at the gate leaves the line unanswered (a large one, here
// as in TestRunningQueries), one that does not wait runs (the test's
// statements do not look at their context). Then the large ones run, one
// at a time, as before.
func TestSmallQueriesDoNotWait(t *testing.T) {
	both, tok := token(t, "both", config.ScopeIngest, config.ScopeQuery)
	held := newHeldStatement()
	const point = `SELECT "from", value FROM readings WHERE malo_id = 'DE1'`
	s := &memStore{held: held, point: point, stmt: memStatement{small: true, columns: []string{"n"}, types: []string{"BIGINT"}, rows: [][]any{{int64(7)}}}}
	h := memHandler(t, s, newMemRecords(), Options{Tokens: []config.Token{both}, MaxConcurrentRequests: 4, MaxRunningQueries: 1})
	query := func(ctx context.Context, sql string) <-chan *httptest.ResponseRecorder {
		answer := make(chan *httptest.ResponseRecorder, 1)
		go func() {
			body, _ := json.Marshal(map[string]string{"sql": sql})
			r := httptest.NewRequestWithContext(ctx, "POST", "/v1/query", bytes.NewReader(body))
			r.Header.Set("Authorization", "Bearer "+tok)
			r.Header.Set("Accept", "text/csv")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			answer <- w
		}()
		return answer
	}
	first := query(t.Context(), "SELECT large")
	<-held.prepared
	<-held.running
	second := query(t.Context(), "SELECT large")
	<-held.prepared
	gone, leave := context.WithCancel(t.Context())
	leave()
	if w := <-query(gone, "SELECT large"); w.Code != statusClientClosed {
		t.Fatalf("a large query whose client went away while every slot is held: %d; want %d", w.Code, statusClientClosed)
	}
	<-held.prepared
	for i := range 3 {
		w := <-query(gone, point)
		if w.Code != 200 || w.Body.String() != "n\n7\n" {
			t.Fatalf("small query %d while every slot is held: %d %q; want 200 with its row", i, w.Code, w.Body)
		}
	}
	if began, _ := held.counts(); began != 1 || len(h.(*handler).running) != 1 {
		t.Fatalf("%d large queries began, %d slots held, after the small ones; want 1 and 1", began, len(h.(*handler).running))
	}
	held.release <- struct{}{}
	if w := <-first; w.Code != 200 {
		t.Errorf("the first large query: %d", w.Code)
	}
	<-held.running
	held.release <- struct{}{}
	if w := <-second; w.Code != 200 {
		t.Errorf("the second large query: %d", w.Code)
	}
	if began, most := held.counts(); began != 2 || most != 1 {
		t.Errorf("%d large queries ran, at most %d at once; want 2, one at a time", began, most)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
)

// A readingKey names one reading of a delivery: its market location and
// the start of its interval, in Unix seconds.
type readingKey struct {
	malo string
	from int64
}

func (k readingKey) String() string {
	return fmt.Sprintf("%s@%s", k.malo, time.Unix(k.from, 0).UTC().Format(time.RFC3339))
}

// A delivery is a CSV body and the readings it holds: keys[i] is on line
// i+2, after the header.
type delivery struct {
	body []byte
	keys []readingKey
}

// deliveryQuarterHours is the quarter hours of a day a delivery holds per
// market location: 00:00 to 20:00 UTC lies within one Berlin day in both
// winter and summer time, whatever the date.
const deliveryQuarterHours = 80

// makeDelivery returns deliveryQuarterHours readings of day for each of
// meters market locations, numbered from first (a MaLo prefix is
// 2_000_000_000 plus the number).
func makeDelivery(day time.Time, first, meters int) delivery {
	var b bytes.Buffer
	b.WriteString("malo_id,obis_code,from,to,value,unit,quality,resolution,version,version_scope\n")
	d := delivery{keys: make([]readingKey, 0, meters*deliveryQuarterHours)}
	for i := range meters {
		m, err := metering.MaLoFromPrefix(fmt.Sprintf("%010d", 2_000_000_000+first+i))
		if err != nil {
			panic(err)
		}
		for q := range deliveryQuarterHours {
			from := day.Add(time.Duration(q) * 15 * time.Minute)
			fmt.Fprintf(&b, "%s,1-1:1.29.0,%s,%s,%d.%03d,kWh,220,PT15M,1,9900000000003:%s\n", m,
				from.Format(time.RFC3339), from.Add(15*time.Minute).Format(time.RFC3339), q%7, q, day.Format("2006-01"))
			d.keys = append(d.keys, readingKey{m.String(), from.Unix()})
		}
	}
	d.body = b.Bytes()
	return d
}

// split returns the body cut after the header and n readings, and the rest.
func (d delivery) split(n int) ([]byte, []byte) {
	at := 0
	for range n + 1 {
		at += bytes.IndexByte(d.body[at:], '\n') + 1
	}
	return d.body[:at], d.body[at:]
}

// withBadLine returns d with the market location of its reading i made
// invalid, which refuses that reading's batch.
func (d delivery) withBadLine(i int) delivery {
	head, rest := d.split(i)
	return delivery{keys: d.keys, body: slices.Concat(head, []byte("12345678901"), rest[len(d.keys[i].malo):])}
}

// A ledger records what the server acknowledged: a reading mapped to true
// must be stored exactly once, one mapped to false (sent, but without an
// answer that says it is stored) at most once.
type ledger struct {
	mu   sync.Mutex
	want map[readingKey]bool
}

func newLedger() *ledger { return &ledger{want: make(map[readingKey]bool)} }

// record notes the outcome of sending d: err for a request that got no
// answer, else the status and body of the answer.
func (l *ledger) record(d delivery, status int, ans ingestAnswer, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	stored := 0
	switch {
	case err != nil:
	case status == http.StatusOK:
		stored = len(d.keys)
	default:
		// The batches before the refused or interrupted one stay.
		stored = max(0, min(len(d.keys), ans.WrittenThroughLine-1))
	}
	for i, k := range d.keys {
		if i < stored {
			l.want[k] = true
		} else if _, ok := l.want[k]; !ok {
			l.want[k] = false
		}
	}
}

// checkExactlyOnce compares the stored count of every reading, got, with
// want (see ledger): a reading stored twice, an acknowledged one missing,
// or one never sent is an error naming the first few.
func checkExactlyOnce(want map[readingKey]bool, got map[readingKey]int) error {
	var problems []string
	for k, n := range got {
		switch _, sent := want[k]; {
		case !sent:
			problems = append(problems, fmt.Sprintf("%v stored %d times, never sent", k, n))
		case n > 1:
			problems = append(problems, fmt.Sprintf("%v stored %d times", k, n))
		case n < 1:
			problems = append(problems, fmt.Sprintf("%v counted %d times", k, n))
		}
	}
	for k, must := range want {
		if _, ok := got[k]; must && !ok {
			problems = append(problems, fmt.Sprintf("%v acknowledged, missing", k))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	slices.Sort(problems)
	n := len(problems)
	return fmt.Errorf("%d readings not stored exactly once, such as:\n%s", n, strings.Join(problems[:min(n, 10)], "\n"))
}

// TestExactlyOnceCheck: the checker the fault tests rely on passes a
// faithful store and catches a reading lost, duplicated, or never sent,
// and a request without an answer counts its readings as at most once.
func TestExactlyOnceCheck(t *testing.T) {
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	l := newLedger()
	acked, cut, lost := makeDelivery(day, 0, 2), makeDelivery(day, 10, 1), makeDelivery(day, 20, 1)
	l.record(acked, http.StatusOK, ingestAnswer{}, nil)
	// A 422 after the first 30 readings were written: lines 2 to 31.
	l.record(cut, http.StatusUnprocessableEntity, ingestAnswer{WrittenThroughLine: 31}, nil)
	l.record(lost, 0, ingestAnswer{}, io.ErrUnexpectedEOF)
	if got, want := countTrue(l.want), len(acked.keys)+30; got != want {
		t.Fatalf("acknowledged %d, want %d", got, want)
	}
	faithful := func() map[readingKey]int {
		got := make(map[readingKey]int)
		for _, k := range acked.keys {
			got[k] = 1
		}
		for _, k := range cut.keys[:30] {
			got[k] = 1
		}
		return got
	}
	if err := checkExactlyOnce(l.want, faithful()); err != nil {
		t.Errorf("a faithful store: %v", err)
	}
	// Readings of unanswered requests and of the batches after a refusal
	// may be there, once.
	maybe := faithful()
	maybe[lost.keys[0]], maybe[cut.keys[40]] = 1, 1
	if err := checkExactlyOnce(l.want, maybe); err != nil {
		t.Errorf("with unacknowledged readings stored once: %v", err)
	}
	broken := map[string]func(map[readingKey]int){
		"an acknowledged reading missing":        func(g map[readingKey]int) { delete(g, acked.keys[5]) },
		"a written batch's reading missing":      func(g map[readingKey]int) { delete(g, cut.keys[29]) },
		"an acknowledged reading twice":          func(g map[readingKey]int) { g[acked.keys[7]] = 2 },
		"an unacknowledged reading twice":        func(g map[readingKey]int) { g[lost.keys[3]] = 2 },
		"a reading never sent":                   func(g map[readingKey]int) { g[makeDelivery(day, 99, 1).keys[0]] = 1 },
		"a reading of a later batch stored zero": func(g map[readingKey]int) { g[cut.keys[50]] = 0 },
	}
	for name, breakIt := range broken {
		got := faithful()
		breakIt(got)
		if err := checkExactlyOnce(l.want, got); err == nil {
			t.Errorf("%s: not caught", name)
		}
	}
	// A 200 after an answerless attempt upgrades the readings to exactly
	// once.
	l.record(lost, http.StatusOK, ingestAnswer{}, nil)
	if err := checkExactlyOnce(l.want, faithful()); err == nil {
		t.Error("a retried and acknowledged delivery missing: not caught")
	}
}

// ingestAnswer is the JSON body of an ingest's answer.
type ingestAnswer struct {
	Inserted           int    `json:"inserted"`
	Present            int    `json:"present"`
	Late               int    `json:"late"`
	Superseded         int    `json:"superseded"`
	Batches            int    `json:"batches"`
	WrittenThroughLine int    `json:"written_through_line"`
	Code               string `json:"code"`
	Error              string `json:"error"`
}

// An apiClient calls a serve with a bearer token.
type apiClient struct {
	base, tok string
	hc        *http.Client
}

func newAPIClient(base, tok string) *apiClient {
	return &apiClient{base: base, tok: tok, hc: &http.Client{Timeout: 2 * time.Minute}}
}

func (c *apiClient) do(ctx context.Context, method, path, ctype string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.tok)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	return c.hc.Do(req)
}

// ingest posts a CSV delivery to table and returns the answer; an error
// means there was none.
func (c *apiClient) ingest(ctx context.Context, table string, body io.Reader) (int, http.Header, ingestAnswer, error) {
	resp, err := c.do(ctx, "POST", "/v1/tables/"+table+"/readings", "text/csv", body)
	if err != nil {
		return 0, nil, ingestAnswer{}, err
	}
	defer resp.Body.Close()
	var ans ingestAnswer
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, ingestAnswer{}, err
	}
	if err := json.Unmarshal(b, &ans); err != nil {
		return 0, nil, ingestAnswer{}, fmt.Errorf("ingest: %d %q: %w", resp.StatusCode, b, err)
	}
	return resp.StatusCode, resp.Header, ans, nil
}

// send posts d whole and records the outcome in l.
func (c *apiClient) send(ctx context.Context, l *ledger, table string, d delivery) (int, ingestAnswer, error) {
	status, _, ans, err := c.ingest(ctx, table, bytes.NewReader(d.body))
	l.record(d, status, ans, err)
	return status, ans, err
}

// query runs sql on table and decodes each JSON line into a new T.
func query[T any](ctx context.Context, c *apiClient, table, sql string) ([]T, error) {
	b, _ := json.Marshal(map[string]string{"table": table, "sql": sql})
	resp, err := c.do(ctx, "POST", "/v1/query", "application/json", bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("query %q: %d %s", sql, resp.StatusCode, msg)
	}
	var out []T
	dec := json.NewDecoder(resp.Body)
	for dec.More() {
		var v T
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("query %q: %w", sql, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// storedCounts returns how many versions of each reading of table both
// tiers hold, as a query over HTTP sees them.
func (c *apiClient) storedCounts(ctx context.Context, table string) (map[readingKey]int, error) {
	type row struct {
		M string `json:"m"`
		F int64  `json:"f"`
		N int    `json:"n"`
	}
	rows, err := query[row](ctx, c, table,
		`SELECT malo_id AS m, CAST(epoch("from") AS BIGINT) AS f, count(*) AS n FROM readings_versions GROUP BY ALL`)
	if err != nil {
		return nil, err
	}
	got := make(map[readingKey]int, len(rows))
	for _, r := range rows {
		got[readingKey{r.M, r.F}] += r.N
	}
	return got, nil
}

// checkStored fails t unless table holds what l wants, as c's server
// answers.
func checkStored(t *testing.T, c *apiClient, l *ledger, table string) {
	t.Helper()
	got, err := c.storedCounts(t.Context(), table)
	// A window the archiver has detached and not yet committed makes the
	// server answer 503 "unavailable", which a client retries: the
	// archiver may still be at work when the test asks.
	for deadline := time.Now().Add(time.Minute); err != nil && strings.Contains(err.Error(), `"code":"unavailable"`) && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		got, err = c.storedCounts(t.Context(), table)
	}
	if err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := checkExactlyOnce(l.want, got); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d readings stored, %d of them acknowledged and found exactly once", table, len(got), countTrue(l.want))
}

func countTrue(m map[readingKey]bool) int {
	n := 0
	for _, v := range m {
		if v {
			n++
		}
	}
	return n
}

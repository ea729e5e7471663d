package servebench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meterstore/meterstore/internal/ingest"
	"github.com/meterstore/meterstore/series"
	"github.com/meterstore/meterstore/store"
)

// A batch is one delivery: its readings and, for the HTTP clients, their
// CSV body.
type batch struct {
	rows []series.Reading
	body []byte
}

// tally counts what a set of writers had acknowledged.
type tally struct {
	acked    atomic.Int64 // readings of batches acknowledged
	inserted atomic.Int64 // readings the acknowledgements say were inserted
	batches  atomic.Int64
	retries  atomic.Int64 // 503s retried
	seq      atomic.Int64 // batches taken, for dropEvery
}

// parallel runs do on every batch with workers goroutines and returns the
// wall time and the first error, after which the rest are not started.
func parallel(ctx context.Context, workers int, batches []batch, do func(context.Context, *batch) error) (time.Duration, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan *batch)
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for b := range next {
				if err := do(ctx, b); err != nil {
					cancel(err)
				}
			}
		})
	}
feed:
	for i := range batches {
		select {
		case next <- &batches[i]:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return time.Since(start), context.Cause(ctx)
}

// writeInProcess is the baseline: the batch through store.Store.Write, cut
// where the server cuts a delivery into atomic batches.
func writeInProcess(s *store.Store, table string, t *tally) func(context.Context, *batch) error {
	return func(ctx context.Context, b *batch) error {
		for rows := range slices.Chunk(b.rows, ingest.DefaultBatchRows) {
			res, err := s.Write(ctx, table, rows)
			if err != nil {
				return fmt.Errorf("servebench: Write into %s: %w", table, err)
			}
			t.inserted.Add(int64(res.Inserted + res.Superseded + res.Shadowed))
		}
		t.batches.Add(1)
		t.acked.Add(int64(len(b.rows)))
		return nil
	}
}

// maxRetries bounds the 503s one batch is retried after.
const maxRetries = 5

// ingestCounts is the body of a 200 from an ingest.
type ingestCounts struct {
	Inserted   int `json:"inserted"`
	Superseded int `json:"superseded"`
	Shadowed   int `json:"shadowed"`
	Present    int `json:"present"`
	Late       int `json:"late"`
	Batches    int `json:"batches"`
}

// An httpClient asks one serve with one token.
type httpClient struct {
	base, token string
	c           *http.Client
	// bufs holds the *[]byte buffers answers are read into.
	bufs sync.Pool
	// dropEvery, when positive, makes the ingest a broken client: every
	// dropEvery-th batch is counted as acknowledged without being sent.
	// Tests set it to see the count check fail.
	dropEvery int
}

// ingest posts the batch to table and counts it once the server has
// acknowledged it. A 503 is retried, a little later, at most maxRetries
// times; any other answer but 200 fails the run.
func (h *httpClient) ingest(table string, t *tally) func(context.Context, *batch) error {
	url := h.base + "/v1/tables/" + table + "/readings"
	return func(ctx context.Context, b *batch) error {
		if n := t.seq.Add(1); h.dropEvery > 0 && n%int64(h.dropEvery) == 0 {
			t.batches.Add(1)
			t.acked.Add(int64(len(b.rows)))
			t.inserted.Add(int64(len(b.rows)))
			return nil
		}
		for try := 0; ; try++ {
			status, body, err := h.post(ctx, url, "text/csv", "", b.body)
			if err != nil {
				return err
			}
			if status == http.StatusServiceUnavailable && try < maxRetries {
				t.retries.Add(1)
				select {
				case <-time.After(time.Duration(try+1) * 100 * time.Millisecond):
					continue
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			if status != http.StatusOK {
				return fmt.Errorf("servebench: POST %s: %d %s", url, status, bytes.TrimSpace(body))
			}
			var c ingestCounts
			if err := json.Unmarshal(body, &c); err != nil {
				return fmt.Errorf("servebench: POST %s: the answer %q: %w", url, body, err)
			}
			t.batches.Add(1)
			t.acked.Add(int64(len(b.rows)))
			t.inserted.Add(int64(c.Inserted + c.Superseded + c.Shadowed))
			return nil
		}
	}
}

// post sends body and returns the status and the whole answer.
func (h *httpClient) post(ctx context.Context, url, contentType, accept string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+h.token)
	req.Header.Set("Content-Type", contentType)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := h.c.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("servebench: POST %s: %w", url, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("servebench: POST %s: reading the answer: %w", url, err)
	}
	return resp.StatusCode, answer, nil
}

// queryAnswer is what one POST /v1/query returned.
type queryAnswer struct {
	status int
	rows   int64 // CSV lines after the header
	bytes  int64
	took   time.Duration
	err    string // a non-200's body, or why the answer could not be read
}

// query posts sql over table, asks for CSV and reads the answer as it
// comes, counting its lines, without holding it.
func (h *httpClient) query(ctx context.Context, table, sql string) queryAnswer {
	body, _ := json.Marshal(map[string]string{"table": table, "sql": sql})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.base+"/v1/query", bytes.NewReader(body))
	if err != nil {
		return queryAnswer{err: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	return h.csv(req)
}

// csv sends req with the token, asking for CSV, and reads the answer as
// it comes, counting its lines after the header, without holding it.
func (h *httpClient) csv(req *http.Request) queryAnswer {
	req.Header.Set("Authorization", "Bearer "+h.token)
	req.Header.Set("Accept", "text/csv")
	start := time.Now()
	resp, err := h.c.Do(req)
	if err != nil {
		return queryAnswer{err: err.Error(), took: time.Since(start)}
	}
	defer resp.Body.Close()
	a := queryAnswer{status: resp.StatusCode}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		a.err, a.took = fmt.Sprintf("%d %s", resp.StatusCode, bytes.TrimSpace(b)), time.Since(start)
		return a
	}
	// No value of the bench's answers holds a line break, so a line is a
	// row. The body is read into a buffer the client's requests share, not
	// a reader of its own each: the bench shares the cores with serve, and
	// pgx reads PostgreSQL's answers into buffers it keeps.
	buf, _ := h.bufs.Get().(*[]byte)
	if buf == nil {
		b := make([]byte, 32<<10)
		buf = &b
	}
	defer h.bufs.Put(buf)
	for {
		n, err := resp.Body.Read(*buf)
		a.bytes += int64(n)
		a.rows += int64(bytes.Count((*buf)[:n], []byte{'\n'}))
		if err == io.EOF {
			break
		}
		if err != nil {
			a.err = "reading the answer: " + err.Error()
			break
		}
	}
	a.took = time.Since(start)
	a.rows-- // the header
	return a
}

// queryLoad runs clients query loops on sql until stop is closed and
// returns their latencies and what went wrong (see loop).
func (h *httpClient) queryLoad(ctx context.Context, stop <-chan struct{}, clients int, table, sql string, wantRows int64) Queries {
	l := loop(ctx, stop, clients, wantRows, func(context.Context, *rand.Rand) queryAnswer { return h.query(ctx, table, sql) })
	return summarize(clients, l)
}

// A loopRun is what the clients of one loop saw.
type loopRun struct {
	took    []time.Duration // of the right answers
	errs    int
	first   string
	rows    int64
	seconds float64
}

// loop runs clients loops of ask until stop is closed, each client with
// a random source of its own. A question in flight when stop closes is
// finished and counted: on a loaded machine one answer can take longer
// than a phase. An answer of other than wantRows rows (when positive)
// counts as an error.
func loop(ctx context.Context, stop <-chan struct{}, clients int, wantRows int64, ask func(context.Context, *rand.Rand) queryAnswer) loopRun {
	var (
		mu sync.Mutex
		l  loopRun
		wg sync.WaitGroup
	)
	start := time.Now()
	for i := range clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), uint64(start.UnixNano())))
			for {
				select {
				case <-stop:
					return
				case <-ctx.Done():
					return
				default:
				}
				a := ask(ctx, rng)
				if a.err == "" && wantRows > 0 && a.rows != wantRows {
					a.err = fmt.Sprintf("%d rows, want %d", a.rows, wantRows)
				}
				mu.Lock()
				if a.err != "" {
					l.errs++
					if l.first == "" {
						l.first = a.err
					}
				} else {
					l.took = append(l.took, a.took)
					l.rows = a.rows
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	l.seconds = time.Since(start).Seconds()
	return l
}

// summarize returns the measurement of the loops runs, of clients each.
func summarize(clients int, runs ...loopRun) Queries {
	q := Queries{Clients: clients}
	var took []time.Duration
	for _, l := range runs {
		took = append(took, l.took...)
		q.Seconds += l.seconds
		q.Errors += l.errs
		if q.FirstError == "" {
			q.FirstError = l.first
		}
		q.Rows = max(q.Rows, l.rows)
	}
	q.Answers = len(took)
	q.P50ms, q.P99ms, q.Maxms = quantiles(took)
	if q.Seconds > 0 {
		q.PerSec = float64(q.Answers) / q.Seconds
	}
	return q
}

// quantiles returns the median, 99th percentile and maximum of d in
// milliseconds (nearest rank), zeros when d is empty.
func quantiles(d []time.Duration) (p50, p99, top float64) {
	if len(d) == 0 {
		return 0, 0, 0
	}
	slices.Sort(d)
	at := func(p float64) float64 {
		i := int(p*float64(len(d))+0.5) - 1
		return float64(d[min(max(i, 0), len(d)-1)].Microseconds()) / 1000
	}
	return at(0.50), at(0.99), at(1)
}

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	mathrand "math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/internal/s3test"
)

// The network fault test: meterstore serve reaches PostgreSQL and the S3
// test server only through Toxiproxy proxies, and while clients ingest
// (with and without Idempotency-Key, above W and late below it, and with
// meterstore ingest through the same proxy), query and read the status,
// and the maintenance loop archives, a schedule of faults runs through
// the proxies. Afterwards every acknowledged reading is stored exactly
// once, every batch of a delivery is there whole or not at all, verify
// --deep passes, W never went back, every answer was a success, worth
// retrying (503 or 409 with Retry-After, exit 75) or nothing else, and
// serve took itself up again after each fault, in a time measured.

const (
	// netDaysBack is how many days before today the tables begin: with
	// the settlement lag of 45 days, about 18 windows are due.
	netDaysBack = 64
	// netPrefillDays of netPrefillMeters market locations are written
	// from the first day on before serve starts: the windows archival
	// has to move while the faults run, one per maintenance cycle.
	netPrefillDays   = 14
	netPrefillMeters = 20
	// netDeliverLimit bounds how long a client retries one delivery.
	netDeliverLimit = 2 * time.Minute
	// netRecoveryLimit is how long serve may take to ingest and answer
	// again after a fault cleared; past it the test fails: serve did not
	// recover on its own, a correctness failure, not a slow one.
	netRecoveryLimit = 2 * time.Minute
	// Client numbers (netMeter) of the workloads, so that every
	// delivery names market locations of its own.
	netPrefillClient = 9
	netLateClient    = 5
	netAbandonClient = 4
	netProbeClient   = 6
	netBrokenClient  = 7
	netCLIClient     = 8
)

// netMeter is the first meter number of client c's round r: a delivery
// names at most 1,000 market locations, the third digit of each is c.
func netMeter(c, r int) int { return c*10_000_000 + r*1000 }

// TestServeNetworkFaults: serve, its PostgreSQL and its S3 warehouse
// (the catalog's log on the object store, so that every catalog commit
// crosses the S3 proxy) through Toxiproxy, under the schedule of
// netSchedule while clients ingest, query and read the status and the
// maintenance loop archives; then the checks named at the top of this
// file, and the checker shown to catch an acknowledged batch dropped.
// broken-retry: the same with a client that retries an ambiguous ingest
// under a new version, without Idempotency-Key and without checking what
// is present, and the checker catches its duplicates.
func TestServeNetworkFaults(t *testing.T) {
	newToxiproxy(t) // skips or fails before the build when there is none
	s3test.Endpoint(t)
	bin := buildBinary(t, t.TempDir())
	t.Run("schedule", func(t *testing.T) { testNetworkSchedule(t, bin) })
	t.Run("broken-retry", func(t *testing.T) { testNetworkBrokenRetry(t, bin) })
}

// A netEnv is a deployment whose PostgreSQL and S3 warehouse are reached
// through proxies of their own.
type netEnv struct {
	*faultEnv
	pg, s3  *proxy
	bucket  string
	s3c     *s3.Client // the S3 server itself, past the proxy
	base    time.Time  // the tables' first day
	prefill []delivery
}

// newNetEnv makes the deployment, its tables from netDaysBack days ago,
// and prefillDays of readings written by meterstore ingest, recorded in l.
func newNetEnv(t *testing.T, l *ledger, prefillDays int) *netEnv {
	t.Helper()
	tp := newToxiproxy(t)
	endpoint, err := url.Parse(s3test.Endpoint(t))
	if err != nil {
		t.Fatal(err)
	}
	bucket := s3test.NewBucket(t)
	pgURL, err := url.Parse(pgtest.NewDB(t))
	if err != nil || pgURL.Scheme != "postgres" && pgURL.Scheme != "postgresql" || pgURL.Host == "" {
		t.Fatalf("the test database's URL %v: want postgres://host:port/...: %v", pgURL, err)
	}
	id := make([]byte, 4)
	rand.Read(id)
	suffix := hex.EncodeToString(id)
	pg := tp.proxy(t, "meterstore-pg-"+suffix, pgURL.Host)
	s3p := tp.proxy(t, "meterstore-s3-"+suffix, endpoint.Host)
	pgURL.Host = pg.listen
	wh := "s3://" + bucket + "?" + url.Values{
		"endpoint":       {endpoint.Scheme + "://" + s3p.listen},
		"region":         {s3test.Region()},
		"use_path_style": {"true"},
	}.Encode()

	dir := t.TempDir()
	e := newFaultEnv(t, dir, pgURL.String(),
		fmt.Sprintf("url = %q", "file://"+filepath.Join(dir, "wh")), fmt.Sprintf("url = %q", wh),
		`log = "postgres"`, `log = "object_store"`,
		// A cycle every 2 seconds archives one window: archival runs
		// through the whole schedule.
		`interval = "15m"`, `interval = "2s"`,
		`max_windows_per_cycle = 31`, `max_windows_per_cycle = 1`,
		`headroom = "7d"`, `headroom = "30d"`)
	n := &netEnv{faultEnv: e, pg: pg, s3: s3p, bucket: bucket, s3c: s3test.Client(t),
		base: today().AddDate(0, 0, -netDaysBack)}
	mustRun(t, "create", "-c", e.cfgPath, "--now", n.base.Format(time.RFC3339))
	mustRun(t, "create", "-c", e.cfgPath)
	if prefillDays == 0 {
		return n
	}
	var body bytes.Buffer
	for day := range prefillDays {
		d := makeDelivery(n.base.AddDate(0, 0, day), netMeter(netPrefillClient, day), netPrefillMeters)
		if day == 0 {
			body.Write(d.body)
		} else {
			_, rest := d.split(0)
			body.Write(rest)
		}
		n.prefill = append(n.prefill, d)
	}
	path := filepath.Join(dir, "prefill.csv")
	if err := os.WriteFile(path, body.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "ingest", "-c", e.cfgPath, "--table", "power", path)
	for _, d := range n.prefill {
		l.record(d, http.StatusOK, ingestAnswer{}, nil)
	}
	return n
}

// heal clears every fault of both proxies.
func (n *netEnv) heal() error {
	if err := n.pg.heal(); err != nil {
		return err
	}
	return n.s3.heal()
}

// logEntries returns the keys of the catalog log's entries in the bucket,
// read from the S3 server directly.
func (n *netEnv) logEntries(ctx context.Context) (map[string]bool, error) {
	keys := map[string]bool{}
	pages := s3.NewListObjectsV2Paginator(n.s3c, &s3.ListObjectsV2Input{Bucket: aws.String(n.bucket), Prefix: aws.String("_log/")})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			if strings.Contains(*o.Key, "/e/") {
				keys[*o.Key] = true
			}
		}
	}
	return keys, nil
}

// A netWorkload is the clients of one run and what they saw.
type netWorkload struct {
	t    *testing.T
	c    *apiClient
	l    *ledger
	base time.Time
	id   string // in every Idempotency-Key of the run
	// limit bounds the wait for an ingest's answer: past it, the
	// request has no answer, and a client sends the delivery again.
	limit time.Duration
	// stop is closed (halt) when the schedule has ended or the test
	// stops: the clients start no new delivery, and finish (retry) the
	// one they have.
	stop     chan struct{}
	stopOnce sync.Once

	mu        sync.Mutex
	sent      []delivery     // every delivery sent, answered or not
	tally     map[string]int // answers by class
	acked     map[string]int // deliveries acknowledged, by kind
	wrong     []string       // answers neither success nor worth retrying
	wSamples  int
	wBackward []string
	powerW    time.Time // the newest W of power sampled
}

func newNetWorkload(t *testing.T, c *apiClient, l *ledger, base time.Time) *netWorkload {
	id := make([]byte, 4)
	rand.Read(id)
	return &netWorkload{t: t, c: c, l: l, base: base, id: hex.EncodeToString(id), limit: 90 * time.Second, stop: make(chan struct{}),
		tally: map[string]int{}, acked: map[string]int{}}
}

// halt closes stop, once.
func (w *netWorkload) halt() { w.stopOnce.Do(func() { close(w.stop) }) }

func (w *netWorkload) stopped() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

func (w *netWorkload) count(class string) {
	w.mu.Lock()
	w.tally[class]++
	w.mu.Unlock()
}

// classify counts an answer to what: no answer, a success, one worth
// retrying (503, or 409 for an idempotency key in flight, each with
// Retry-After), or anything else, which is wrong: the clients send
// nothing but valid requests, so even a refusal of bad input (4xx) would
// be the server calling good input bad.
func (w *netWorkload) classify(what string, status int, hdr http.Header, code, msg string, err error) {
	var class string
	switch {
	case err != nil:
		class = "no answer"
	case status == http.StatusOK && code == "":
		class = "ok"
	case status == http.StatusOK && code == "unavailable":
		// A query's rows cut short by a last line naming a transient
		// cause: worth retrying.
		class = "cut short"
	case status == http.StatusServiceUnavailable && hdr.Get("Retry-After") != "":
		class = "503"
	case status == http.StatusConflict && code == "in_flight" && hdr.Get("Retry-After") != "":
		class = "409"
	default:
		class = "wrong"
	}
	w.count(class)
	if class == "wrong" || class == "no answer" {
		w.mu.Lock()
		defer w.mu.Unlock()
		if len(w.wrong) < 50 {
			w.wrong = append(w.wrong, fmt.Sprintf("%s: %d %s %q %v", what, status, code, msg, err))
		}
	}
}

// ingest posts d to power with key as its Idempotency-Key (none if ""),
// waiting at most limit for the answer; an error means there was none.
func (w *netWorkload) ingest(ctx context.Context, body []byte, key string, limit time.Duration) (int, http.Header, ingestAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", w.c.base+"/v1/tables/power/readings", bytes.NewReader(body))
	if err != nil {
		return 0, nil, ingestAnswer{}, err
	}
	req.Header.Set("Authorization", "Bearer "+w.c.tok)
	req.Header.Set("Content-Type", "text/csv")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := w.c.hc.Do(req)
	if err != nil {
		return 0, nil, ingestAnswer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, ingestAnswer{}, err
	}
	var ans ingestAnswer
	if err := json.Unmarshal(b, &ans); err != nil {
		return resp.StatusCode, resp.Header, ingestAnswer{Error: string(b)}, nil
	}
	return resp.StatusCode, resp.Header, ans, nil
}

// query counts power's readings in mode and returns the status, headers
// and the error code and message of the answer: for a 200, those of a
// last line that says the rows were cut short.
func (w *netWorkload) query(ctx context.Context, mode string, limit time.Duration) (int, http.Header, string, string, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	resp, err := w.c.do(ctx, "POST", "/v1/query", "application/json",
		strings.NewReader(`{"sql": "SELECT count(*) AS n FROM readings", "table": "power", "mode": "`+mode+`"}`))
	if err != nil {
		return 0, nil, "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, "", "", err
	}
	var e struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	json.Unmarshal(lines[len(lines)-1], &e)
	return resp.StatusCode, resp.Header, e.Code, e.Error, nil
}

// deliver sends d, with key as its Idempotency-Key if not "", until it is
// acknowledged, sending the same body again after an answer worth
// retrying or none, for at most netDeliverLimit. It reports whether d was
// acknowledged.
func (w *netWorkload) deliver(ctx context.Context, what string, d delivery, key string) bool {
	w.mu.Lock()
	w.sent = append(w.sent, d)
	w.mu.Unlock()
	deadline := time.Now().Add(netDeliverLimit)
	for {
		status, hdr, ans, err := w.ingest(ctx, d.body, key, w.limit)
		w.l.record(d, status, ans, err)
		if err != nil && w.limit < 90*time.Second {
			w.count("abandoned") // the client's own short wait ended
		} else {
			w.classify(what, status, hdr, ans.Code, ans.Error, err)
		}
		switch {
		case err == nil && status == http.StatusOK:
			w.mu.Lock()
			w.acked[what]++
			w.mu.Unlock()
			return true
		case ctx.Err() != nil || time.Now().After(deadline):
			return false
		case err == nil && status != http.StatusServiceUnavailable && status != http.StatusConflict:
			return false // refused: sending it again cannot help
		}
		time.Sleep(time.Duration(250+mathrand.IntN(500)) * time.Millisecond)
	}
}

// hotClient delivers a round of today's readings every 1.5 seconds or
// so until the schedule ends: 10 market locations (800 readings, one
// batch), every eighth round 130 (10,400 readings, two batches), with an
// Idempotency-Key when keyed says so.
func (w *netWorkload) hotClient(ctx context.Context, cl int, keyed func(r int) bool) {
	for r := 0; r < 1000 && !w.stopped(); r++ {
		meters := 10
		if r%8 == 3 {
			meters = 130
		}
		key := ""
		if keyed(r) {
			key = fmt.Sprintf("net-%s-%d-%d", w.id, cl, r)
		}
		w.deliver(ctx, "ingest", makeDelivery(today(), netMeter(cl, r), meters), key)
		time.Sleep(1500 * time.Millisecond)
	}
}

// lateClient delivers readings of new market locations for days below W,
// which go to the cold tier: each a catalog commit through the S3 proxy.
func (w *netWorkload) lateClient(ctx context.Context) {
	for r := 0; r < 1000 && !w.stopped(); r++ {
		w.mu.Lock()
		days := int(w.powerW.Sub(w.base) / (24 * time.Hour))
		w.mu.Unlock()
		if days < 1 {
			time.Sleep(500 * time.Millisecond)
			continue
		}
		key := ""
		if r%2 == 1 {
			key = fmt.Sprintf("net-%s-late-%d", w.id, r)
		}
		w.deliver(ctx, "late ingest", makeDelivery(w.base.AddDate(0, 0, r%days), netMeter(netLateClient, r), 5), key)
		time.Sleep(time.Second)
	}
}

// abandonClient sends deliveries once each and gives up on the answer
// after a random 50 ms to 1.5 s, never sending them again: readings that
// may or may not be stored, whose batches must be whole or absent.
func (w *netWorkload) abandonClient(ctx context.Context) {
	for r := 0; r < 1000 && !w.stopped(); r++ {
		d := makeDelivery(today(), netMeter(netAbandonClient, r), 10)
		w.mu.Lock()
		w.sent = append(w.sent, d)
		w.mu.Unlock()
		status, hdr, ans, err := w.ingest(ctx, d.body, "", time.Duration(50+mathrand.IntN(1450))*time.Millisecond)
		w.l.record(d, status, ans, err)
		if err != nil {
			w.count("abandoned")
		} else {
			w.classify("abandoned ingest", status, hdr, ans.Code, ans.Error, err)
		}
		time.Sleep(time.Second)
	}
}

// cliClient delivers today's readings with meterstore ingest, which
// reaches PostgreSQL through the same proxy as serve, every 2 seconds or
// so until the schedule ends: exit 0 is an acknowledgement, exit 75 an
// answer worth retrying (the delivery is sent again, as a scheduler
// would), any other exit wrong. A run past the workload's limit is killed
// and counted as no answer.
func (w *netWorkload) cliClient(ctx context.Context, bin, cfgPath, dir string) {
	for r := 0; r < 1000 && !w.stopped(); r++ {
		d := makeDelivery(today(), netMeter(netCLIClient, r), 10)
		path := filepath.Join(dir, fmt.Sprintf("cli-%d.csv", r))
		if err := os.WriteFile(path, d.body, 0o644); err != nil {
			w.t.Error(err)
			return
		}
		w.mu.Lock()
		w.sent = append(w.sent, d)
		w.mu.Unlock()
		deadline := time.Now().Add(netDeliverLimit)
		for ctx.Err() == nil && time.Now().Before(deadline) {
			code, out, err := runCLI(ctx, w.limit, bin, "ingest", "-c", cfgPath, "--table", "power", path)
			class := "no answer"
			switch {
			case err != nil:
			case code == 0:
				class = "ok"
			case code == exitRetryable:
				class = "exit 75"
			default:
				class = "wrong"
			}
			w.count("cli " + class)
			if class == "ok" {
				w.l.record(d, http.StatusOK, ingestAnswer{}, nil)
				w.mu.Lock()
				w.acked["cli ingest"]++
				w.mu.Unlock()
				break
			}
			// Whatever it did is unknown: at most once.
			w.l.record(d, 0, ingestAnswer{}, fmt.Errorf("exit %d", code))
			if class != "exit 75" {
				w.mu.Lock()
				if len(w.wrong) < 50 {
					w.wrong = append(w.wrong, fmt.Sprintf("meterstore ingest: exit %d %v: %s", code, err, lastLine(out)))
				}
				w.mu.Unlock()
				break
			}
			time.Sleep(time.Duration(250+mathrand.IntN(500)) * time.Millisecond)
		}
		time.Sleep(2 * time.Second)
	}
}

// runCLI runs bin with args for at most limit and returns its exit status
// and output; err is set when it did not exit by itself.
func runCLI(ctx context.Context, limit time.Duration, bin string, args ...string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if ctx.Err() != nil {
		return -1, out, fmt.Errorf("%s: %w", args[0], ctx.Err())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out, nil
	}
	if err != nil {
		return -1, out, err
	}
	return 0, out, nil
}

// lastLine is the last non-empty line of out, where a command says why
// it failed.
func lastLine(out []byte) string {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	return string(lines[len(lines)-1])
}

// queryClient counts power's readings in each read mode in turn.
func (w *netWorkload) queryClient(ctx context.Context) {
	modes := []string{"auto", "operational", "historical"}
	for i := 0; i < 5000 && !w.stopped(); i++ {
		status, hdr, code, msg, err := w.query(ctx, modes[i%3], 90*time.Second)
		w.classify("query "+modes[i%3], status, hdr, code, msg, err)
		time.Sleep(200 * time.Millisecond)
	}
}

// statusSampler reads /v1/status every 200 ms until done is closed and
// notes a watermark earlier than one sampled before.
func (w *netWorkload) statusSampler(ctx context.Context, done <-chan struct{}) {
	last := map[string]time.Time{}
	for i := 0; i < 10_000; i++ {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
		rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		resp, err := w.c.do(rctx, "GET", "/v1/status", "", nil)
		if err != nil {
			cancel()
			w.classify("status", 0, nil, "", "", err)
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		var body struct {
			Tables []statusRow `json:"tables"`
			Code   string      `json:"code"`
			Error  string      `json:"error"`
		}
		json.Unmarshal(b, &body)
		w.classify("status", resp.StatusCode, resp.Header, body.Code, body.Error, err)
		if resp.StatusCode != http.StatusOK {
			continue
		}
		w.mu.Lock()
		w.wSamples++
		for _, st := range body.Tables {
			if st.Watermark == nil {
				continue
			}
			if prev, ok := last[st.Table]; ok && st.Watermark.Before(prev) {
				w.wBackward = append(w.wBackward, fmt.Sprintf("%s: W %v after %v", st.Table, st.Watermark, prev))
			}
			if !st.Watermark.Before(last[st.Table]) {
				last[st.Table] = *st.Watermark
			}
			if st.Table == "power" && st.Watermark.After(w.powerW) {
				w.powerW = *st.Watermark
			}
		}
		w.mu.Unlock()
	}
}

// recovery measures how long after cleared serve ingests a new delivery
// and answers a query of both tiers again, probing every 100 ms for at
// most netRecoveryLimit.
func (w *netWorkload) recovery(ctx context.Context, probe int, cleared time.Time) (time.Duration, error) {
	d := makeDelivery(today(), netMeter(netProbeClient, probe), 1)
	w.mu.Lock()
	w.sent = append(w.sent, d)
	w.mu.Unlock()
	key := fmt.Sprintf("net-%s-probe-%d", w.id, probe)
	var ingested, queried time.Time
	for ingested.IsZero() || queried.IsZero() {
		if time.Since(cleared) > netRecoveryLimit {
			return 0, fmt.Errorf("serve did not ingest (%v) and answer a query (%v) within %v of the fault's end",
				!ingested.IsZero(), !queried.IsZero(), netRecoveryLimit)
		}
		if ingested.IsZero() {
			status, hdr, ans, err := w.ingest(ctx, d.body, key, 60*time.Second)
			w.l.record(d, status, ans, err)
			w.classify("probe ingest", status, hdr, ans.Code, ans.Error, err)
			if err == nil && status == http.StatusOK {
				ingested = time.Now()
			}
		}
		if queried.IsZero() {
			status, hdr, code, msg, err := w.query(ctx, "auto", 60*time.Second)
			w.classify("probe query", status, hdr, code, msg, err)
			if err == nil && status == http.StatusOK {
				queried = time.Now()
			}
		}
		if ingested.IsZero() || queried.IsZero() {
			time.Sleep(100 * time.Millisecond)
		}
	}
	return max(ingested.Sub(cleared), queried.Sub(cleared)), nil
}

// A netFault is one fault of the schedule: apply injects it (and may
// wait for the moment it is meant for), hold is how long it lasts.
type netFault struct {
	name  string
	hold  time.Duration
	apply func(ctx context.Context, n *netEnv) (string, error)
}

// toxicFault is a fault of toxics added to p (chosen from n) at once.
func toxicFault(name string, hold time.Duration, which func(*netEnv) *proxy, toxics ...toxicSpec) netFault {
	return netFault{name: name, hold: hold, apply: func(_ context.Context, n *netEnv) (string, error) {
		p := which(n)
		for _, x := range toxics {
			if x.wait > 0 {
				time.Sleep(x.wait)
			}
			if err := p.toxic(x.name, x.typ, x.stream, x.toxicity, x.attrs); err != nil {
				return "", err
			}
		}
		return "", nil
	}}
}

// A toxicSpec is a toxic to add, wait after the previous one.
type toxicSpec struct {
	name, typ, stream string
	toxicity          float64
	attrs             map[string]any
	wait              time.Duration
}

func pgOf(n *netEnv) *proxy { return n.pg }
func s3Of(n *netEnv) *proxy { return n.s3 }

// netSchedule is the faults of a run, in order.
func netSchedule() []netFault {
	return []netFault{
		{name: "s3-timeout-during-commit", hold: 2 * time.Second, apply: commitTimeout},
		toxicFault("pg-reset-mid-statement", 5*time.Second, pgOf,
			// Half the connections are reset on the next data the
			// server sends: a reply, a COMMIT's among them.
			toxicSpec{name: "reset", typ: "reset_peer", stream: "downstream", toxicity: 0.5, attrs: map[string]any{"timeout": 0}}),
		toxicFault("pg-reset-mid-copy", 4*time.Second, pgOf,
			// Writes slowed to 100 KB/s, so that a COPY of a batch
			// takes seconds, then every connection reset on the next
			// data it sends: a COPY under way is cut off.
			toxicSpec{name: "slow", typ: "bandwidth", stream: "upstream", toxicity: 1, attrs: map[string]any{"rate": 100}},
			toxicSpec{name: "reset", typ: "reset_peer", stream: "upstream", toxicity: 1, attrs: map[string]any{"timeout": 0}, wait: 1500 * time.Millisecond}),
		toxicFault("pg-latency-2s", 4*time.Second, pgOf,
			toxicSpec{name: "latency", typ: "latency", stream: "downstream", toxicity: 1, attrs: map[string]any{"latency": 2000, "jitter": 1000}}),
		toxicFault("pg-bandwidth-32KB/s", 4*time.Second, pgOf,
			toxicSpec{name: "up", typ: "bandwidth", stream: "upstream", toxicity: 1, attrs: map[string]any{"rate": 32}},
			toxicSpec{name: "down", typ: "bandwidth", stream: "downstream", toxicity: 1, attrs: map[string]any{"rate": 32}}),
		repliesLost(3 * time.Second),
		toxicFault("s3-latency-2s", 4*time.Second, s3Of,
			toxicSpec{name: "latency", typ: "latency", stream: "downstream", toxicity: 1, attrs: map[string]any{"latency": 2000, "jitter": 500}}),
		toxicFault("s3-bandwidth-64KB/s", 4*time.Second, s3Of,
			toxicSpec{name: "up", typ: "bandwidth", stream: "upstream", toxicity: 1, attrs: map[string]any{"rate": 64}},
			toxicSpec{name: "down", typ: "bandwidth", stream: "downstream", toxicity: 1, attrs: map[string]any{"rate": 64}}),
		toxicFault("s3-reset", 4*time.Second, s3Of,
			toxicSpec{name: "reset", typ: "reset_peer", stream: "downstream", toxicity: 0.5, attrs: map[string]any{"timeout": 0}}),
		{name: "pg-unreachable-20s", hold: 20 * time.Second, apply: func(_ context.Context, n *netEnv) (string, error) {
			return "", n.pg.setEnabled(false)
		}},
		{name: "s3-unreachable-20s", hold: 20 * time.Second, apply: func(_ context.Context, n *netEnv) (string, error) {
			return "", n.s3.setEnabled(false)
		}},
	}
}

// repliesLost: PostgreSQL's replies are delayed by half a second, then
// every reply is dropped and each connection closed after a second of it:
// the statements and COMMITs whose replies were held in the delay ran,
// and serve cannot know.
func repliesLost(hold time.Duration) netFault {
	return toxicFault("pg-replies-lost", hold, pgOf,
		toxicSpec{name: "slow", typ: "latency", stream: "downstream", toxicity: 1, attrs: map[string]any{"latency": 500}},
		toxicSpec{name: "lost", typ: "timeout", stream: "downstream", toxicity: 1, attrs: map[string]any{"timeout": 1000},
			wait: 1500 * time.Millisecond})
}

// commitTimeout waits for a catalog commit and makes it time out: the S3
// server's answers are delayed by 300 ms, and when a new entry of the
// catalog's log appears in the bucket (its PutIfAbsent has landed, its
// answer is on its way back, held in the delay), every answer is dropped
// and the connections closed after a second of it: the commit is done
// and serve cannot know.
func commitTimeout(ctx context.Context, n *netEnv) (string, error) {
	before, err := n.logEntries(ctx)
	if err != nil {
		return "", err
	}
	if err := n.s3.toxic("slow", "latency", "downstream", 1, map[string]any{"latency": 300}); err != nil {
		return "", err
	}
	for deadline := time.Now().Add(45 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		now, err := n.logEntries(ctx)
		if err != nil {
			return "", err
		}
		for k := range now {
			if !before[k] {
				err := n.s3.toxic("timeout", "timeout", "downstream", 1, map[string]any{"timeout": 1000})
				return "caught the commit of " + k, err
			}
		}
	}
	err = n.s3.toxic("timeout", "timeout", "downstream", 1, map[string]any{"timeout": 1000})
	return "no commit within 45s: timed out whatever was in flight", err
}

// netOutcome is what the final checks found.
type netOutcome struct {
	acked, stored, dups, lost, unackedStored, unacked int
}

// netCount compares what is stored, got, with what l wants.
func netCount(l *ledger, got map[readingKey]int) netOutcome {
	var o netOutcome
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, must := range l.want {
		n := got[k]
		switch {
		case must:
			o.acked++
			if n == 0 {
				o.lost++
			}
		default:
			o.unacked++
			if n > 0 {
				o.unackedStored++
			}
		}
	}
	for _, n := range got {
		o.stored += n
		if n > 1 {
			o.dups += n - 1
		}
	}
	return o
}

// checkBatchesWhole fails t unless every batch of every delivery sent is
// stored whole or not at all.
func checkBatchesWhole(t *testing.T, sent []delivery, got map[readingKey]int) {
	t.Helper()
	var broken []string
	for _, d := range sent {
		for lo := 0; lo < len(d.keys); lo += batchRows {
			batch := d.keys[lo:min(lo+batchRows, len(d.keys))]
			n := 0
			for _, k := range batch {
				if got[k] > 0 {
					n++
				}
			}
			if n != 0 && n != len(batch) {
				broken = append(broken, fmt.Sprintf("the batch from %v: %d of %d readings stored", batch[0], n, len(batch)))
			}
		}
	}
	if len(broken) > 0 {
		t.Errorf("%d batches half written, such as:\n%s", len(broken), strings.Join(broken[:min(len(broken), 10)], "\n"))
	}
}

// netSummary is the run's summary line, also appended to the file
// MS_TEST_SUMMARY names, which .ci/run prints.
func netSummary(t *testing.T, line string) {
	t.Helper()
	t.Log(line)
	if p := os.Getenv("MS_TEST_SUMMARY"); p != "" {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		fmt.Fprintln(f, line)
	}
}

// runWorkload starts the clients of w; the returned function ends the
// status sampler once the clients are done and the final checks read.
func runWorkload(ctx context.Context, w *netWorkload, clients *sync.WaitGroup, extra ...func(context.Context)) func() {
	done := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() { w.statusSampler(ctx, done) })
	clients.Go(func() { w.hotClient(ctx, 1, func(int) bool { return false }) })
	clients.Go(func() { w.hotClient(ctx, 2, func(int) bool { return true }) })
	clients.Go(func() { w.hotClient(ctx, 3, func(r int) bool { return r%2 == 0 }) })
	clients.Go(func() { w.lateClient(ctx) })
	clients.Go(func() { w.abandonClient(ctx) })
	clients.Go(func() { w.queryClient(ctx) })
	for _, f := range extra {
		clients.Go(func() { f(ctx) })
	}
	return func() {
		close(done)
		sampler.Wait()
	}
}

// testNetworkSchedule runs netSchedule under the workload and checks the
// outcome.
func testNetworkSchedule(t *testing.T, bin string) {
	start := time.Now()
	l := newLedger()
	n := newNetEnv(t, l, netPrefillDays)
	p := startServe(t, bin, n.cfgPath, "-v")
	defer func() {
		if t.Failed() {
			t.Logf("serve's log:\n%s", p.stderr.String())
		}
	}()
	c := newAPIClient(p.base, n.tok)
	c.hc.Timeout = 0 // each request has a deadline of its own
	w := newNetWorkload(t, c, l, n.base)
	ctx := t.Context()
	var clients sync.WaitGroup
	endSampler := runWorkload(ctx, w, &clients, func(ctx context.Context) {
		w.cliClient(ctx, bin, n.cfgPath, t.TempDir())
	})
	// A test that stops early stops its clients, and waits for them.
	defer clients.Wait()
	defer w.halt()
	setup := time.Since(start)
	// Archival is under way before the first fault.
	p.waitLog(archived, 2*time.Minute)

	faults := netSchedule()
	var longest time.Duration
	var longestAfter string
	for i, f := range faults {
		before := w.snapshotTally()
		note, err := f.apply(ctx, n)
		if err != nil {
			n.heal()
			t.Fatalf("%s: %v", f.name, err)
		}
		time.Sleep(f.hold)
		if err := n.heal(); err != nil {
			t.Fatalf("%s: clearing: %v", f.name, err)
		}
		cleared := time.Now()
		rec, err := w.recovery(ctx, i, cleared)
		if err != nil {
			t.Errorf("%s: %v", f.name, err)
			break
		}
		if rec > longest {
			longest, longestAfter = rec, f.name
		}
		t.Logf("fault %d %s (%s): held %v, answers meanwhile %v; ingest and query again %v after it cleared",
			i+1, f.name, note, f.hold, w.tallySince(before), rec.Round(time.Millisecond))
	}
	w.halt()
	clients.Wait()
	faultsEnd := time.Now()

	// Archival catches up: every day of the prefill archived.
	waitWatermark(t, c, "power", n.base.AddDate(0, 0, netPrefillDays), netRecoveryLimit)
	t.Logf("every prefilled day archived %v after the last fault", time.Since(faultsEnd).Round(time.Millisecond))
	got, err := c.storedCounts(ctx, "power")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkExactlyOnce(l.want, got); err != nil {
		t.Error(err)
	}
	endSampler()
	w.mu.Lock()
	sent := slices.Clone(w.sent)
	w.mu.Unlock()
	checkBatchesWhole(t, append(sent, n.prefill...), got)
	o := netCount(l, got)
	if len(w.wBackward) > 0 {
		t.Errorf("W went back: %s", strings.Join(w.wBackward, "; "))
	}
	if len(w.wrong) > 0 {
		bad := 0
		for class, n := range w.tally {
			if strings.HasSuffix(class, "wrong") || strings.HasSuffix(class, "no answer") {
				bad += n
			}
		}
		t.Errorf("%d answers neither a success nor worth retrying, such as:\n%s", bad, strings.Join(w.wrong, "\n"))
	}
	if code := p.terminate(time.Minute); code != 0 {
		t.Errorf("serve: exit %d", code)
	}
	verifyStart := time.Now()
	verify := exec.CommandContext(ctx, bin, "verify", "--deep", "-c", n.cfgPath)
	if out, err := verify.CombinedOutput(); err != nil {
		t.Errorf("verify --deep: %v\n%s", err, out)
	}
	t.Logf("verify --deep passed in %v", time.Since(verifyStart).Round(time.Millisecond))

	// Teeth: the checker, given the store less one acknowledged batch,
	// names it. The first delivery sent may have been refused or
	// abandoned, so the batch is the first whose readings were
	// acknowledged.
	dropped := maps.Clone(got)
	for _, d := range sent {
		if len(d.keys) == 0 || !l.want[d.keys[0]] {
			continue
		}
		for _, k := range d.keys[:min(batchRows, len(d.keys))] {
			delete(dropped, k)
		}
		break
	}
	if err := checkExactlyOnce(l.want, dropped); err == nil || !strings.Contains(err.Error(), "acknowledged, missing") {
		t.Errorf("the store less an acknowledged batch: the checker says %v", err)
	}

	names := make([]string, len(faults))
	for i, f := range faults {
		names[i] = f.name
	}
	netSummary(t, fmt.Sprintf("network faults: %d injected (%s); readings acknowledged %d, stored %d, duplicates %d, lost %d; "+
		"unacknowledged %d, of them stored %d; deliveries acknowledged %v; answers %v; W sampled %d times, backwards %d; "+
		"longest recovery after a fault cleared %v (%s); setup %v, faults %v, checks %v",
		len(faults), strings.Join(names, ", "), o.acked, o.stored, o.dups, o.lost, o.unacked, o.unackedStored,
		w.acked, w.tally, w.wSamples, len(w.wBackward), longest.Round(time.Millisecond), longestAfter,
		setup.Round(time.Second), faultsEnd.Sub(start.Add(setup)).Round(time.Second), time.Since(faultsEnd).Round(time.Second)))
}

func (w *netWorkload) snapshotTally() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int, len(w.tally))
	for k, v := range w.tally {
		out[k] = v
	}
	return out
}

func (w *netWorkload) tallySince(before map[string]int) map[string]int {
	now := w.snapshotTally()
	for k, v := range before {
		now[k] -= v
		if now[k] == 0 {
			delete(now, k)
		}
	}
	return now
}

// brokenFaults bounds the faults testNetworkBrokenRetry injects before it
// gives up on seeing the broken client caught.
const brokenFaults = 3

// brokenClient delivers today's readings as a careless client does: each
// attempt stamps the delivery with its time in milliseconds as the
// version (as a client does that gives an unversioned delivery its
// arrival time), and after an answer worth retrying, or none within the
// workload's limit, it sends it again stamped anew, without
// Idempotency-Key and without asking what is present. A delivery whose
// first attempt was stored although its answer was lost is then stored
// twice.
func (w *netWorkload) brokenClient(ctx context.Context) {
	for r := 0; r < 1000 && !w.stopped(); r++ {
		d := makeDelivery(today(), netMeter(netBrokenClient, r), 10)
		w.mu.Lock()
		w.sent = append(w.sent, d)
		w.mu.Unlock()
		for attempt := 0; attempt < 20 && ctx.Err() == nil; attempt++ {
			v := fmt.Sprintf(",PT15M,%d,9900000000003:", time.Now().UnixMilli())
			body := bytes.ReplaceAll(d.body, []byte(",PT15M,1,9900000000003:"), []byte(v))
			status, hdr, ans, err := w.ingest(ctx, body, "", w.limit)
			w.l.record(d, status, ans, err)
			if err != nil {
				w.count("abandoned")
			} else {
				w.classify("broken ingest", status, hdr, ans.Code, ans.Error, err)
			}
			if err == nil && status != http.StatusServiceUnavailable && status != http.StatusConflict {
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// clientOf is the client whose delivery named k's market location.
func clientOf(k readingKey) byte { return k.malo[2] }

// testNetworkBrokenRetry: two careful clients and the broken one ingest
// through a proxy of their own in front of serve, and wait at most a
// second for an answer; then serve's answers are delayed by 2 seconds on
// their way back: each delivery is stored, and its client cannot know.
// The careful clients send the same body again (with the same
// Idempotency-Key or none: present either way), the broken one a new
// version of it. The exactly-once checker finds readings stored twice,
// every one of them the broken client's, and the careful clients'
// readings each stored exactly once.
func testNetworkBrokenRetry(t *testing.T, bin string) {
	start := time.Now()
	l := newLedger()
	n := newNetEnv(t, l, 0)
	p := startServe(t, bin, n.cfgPath)
	defer func() {
		if t.Failed() {
			t.Logf("serve's log:\n%s", p.stderr.String())
		}
	}()
	id := make([]byte, 4)
	rand.Read(id)
	api := newToxiproxy(t).proxy(t, "meterstore-api-"+hex.EncodeToString(id), strings.TrimPrefix(p.base, "http://"))
	c := newAPIClient("http://"+api.listen, n.tok)
	c.hc.Timeout = 0
	w := newNetWorkload(t, c, l, n.base)
	w.limit = time.Second
	ctx := t.Context()
	var clients sync.WaitGroup
	defer clients.Wait()
	defer w.halt()
	clients.Go(func() { w.hotClient(ctx, 1, func(int) bool { return false }) })
	clients.Go(func() { w.hotClient(ctx, 2, func(int) bool { return true }) })
	clients.Go(func() { w.brokenClient(ctx) })

	twice := 0
	faults := 0
	for faults < brokenFaults && twice == 0 {
		if err := api.toxic("late", "latency", "downstream", 1, map[string]any{"latency": 2000}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		if err := api.heal(); err != nil {
			t.Fatal(err)
		}
		faults++
		if _, err := w.recovery(ctx, faults, time.Now()); err != nil {
			t.Fatal(err)
		}
		// The answers held in the delay are delivered or dropped.
		time.Sleep(3 * time.Second)
		// While the clients run, only a reading stored twice is sure to
		// be wrong: an acknowledgement may come after this read.
		got, err := c.storedCounts(ctx, "power")
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range got {
			if n > 1 {
				twice++
			}
		}
	}
	w.halt()
	clients.Wait()
	if twice == 0 {
		t.Fatalf("%d faults, and no reading of the broken client is stored twice: no ingest's outcome was lost", faults)
	}
	got, err := c.storedCounts(ctx, "power")
	if err != nil {
		t.Fatal(err)
	}
	caught := checkExactlyOnce(l.want, got)
	if caught == nil || !strings.Contains(caught.Error(), " times") {
		t.Fatalf("the checker does not catch the broken client's readings stored twice: %v", caught)
	}
	t.Logf("the checker says: %v", caught)
	// The careful clients' readings, and theirs alone, are stored
	// exactly once.
	broken := func(k readingKey) bool { return clientOf(k) == '0'+netBrokenClient }
	l.mu.Lock()
	want := maps.Clone(l.want)
	l.mu.Unlock()
	carefulGot := maps.Clone(got)
	maps.DeleteFunc(want, func(k readingKey, _ bool) bool { return broken(k) })
	maps.DeleteFunc(carefulGot, func(k readingKey, _ int) bool { return broken(k) })
	if err := checkExactlyOnce(want, carefulGot); err != nil {
		t.Errorf("the careful clients' readings: %v", err)
	}
	o := netCount(l, got)
	twice = 0
	for k, n := range got {
		if n > 1 {
			twice++
			if !broken(k) {
				t.Errorf("%v stored %d times, not the broken client's", k, n)
			}
		}
	}
	netSummary(t, fmt.Sprintf("network faults, broken retry: caught after %d injected (api-answers-delayed-2s): %d readings stored twice or more, all the broken client's; "+
		"readings acknowledged %d, stored %d, duplicates %d, lost %d; answers %v; run %v",
		faults, twice, o.acked, o.stored, o.dups, o.lost, w.tally, time.Since(start).Round(time.Second)))
}

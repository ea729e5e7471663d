package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/meterstore/meterstore/internal/pgtest"
)

// A faultEnv is a deployment for the fault tests: its configuration, with
// a token of every scope, on a PostgreSQL database and a warehouse of its
// own.
type faultEnv struct {
	dir, cfgPath, pgURL, tok string
}

// newFaultEnv writes the configuration of a deployment in dir on the
// database at pgURL (empty: a new database of the test server), serving
// on a free port of 127.0.0.1, with each of the replacements of edits
// (old, new pairs of the template's lines) applied.
func newFaultEnv(t *testing.T, dir, pgURL string, edits ...string) *faultEnv {
	t.Helper()
	if pgURL == "" {
		pgURL = pgtest.NewDB(t)
	}
	e := &faultEnv{dir: dir, cfgPath: filepath.Join(dir, "meterstore.toml"), pgURL: pgURL}
	mustRun(t, "init", e.cfgPath)
	tmpl, err := os.ReadFile(e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	tok, section := parseToken(t, mustRun(t, "token", "--name", "ops", "--scope", "ingest,query,admin"))
	e.tok = tok
	edits = append([]string{
		`url = ""`, fmt.Sprintf("url = %q", pgURL),
		`data_dir = "meterstore-data"`, fmt.Sprintf("data_dir = %q", dir),
		`url = "file://meterstore-data/warehouse"`, fmt.Sprintf("url = %q", "file://"+filepath.Join(dir, "wh")),
		`listen = "127.0.0.1:8080"`, `listen = "127.0.0.1:0"`,
		// Slow clients under the race detector on two cores must not
		// meet the read timeout: the tests stall bodies on purpose.
		`read_timeout = "30s"`, `read_timeout = "5m"`,
	}, edits...)
	text := string(tmpl)
	for i := 0; i < len(edits); i += 2 {
		if !strings.Contains(text, edits[i]) {
			t.Fatalf("the template has no %q", edits[i])
		}
		text = strings.Replace(text, edits[i], edits[i+1], 1)
	}
	if err := os.WriteFile(e.cfgPath, []byte(text+"\n"+section), 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

// today is the start of the current UTC day.
func today() time.Time { return time.Now().UTC().Truncate(24 * time.Hour) }

// meterBase is the first meter number of client c in round r, so that
// every delivery of a test names its own market locations.
func meterBase(c, r int) int { return c*10_000_000 + r*100_000 }

// streamedIngest is a delivery sent by a client that stops mid-body after
// the first batch, until released.
type streamedIngest struct {
	d       delivery
	release chan struct{}
	done    chan struct{}
	status  int
	ans     ingestAnswer
	err     error
}

// startStreamed posts d to table from a goroutine: the header and the
// first head readings, then nothing until release is closed, then the
// rest.
func startStreamed(ctx context.Context, c *apiClient, table string, d delivery, head int) *streamedIngest {
	s := &streamedIngest{d: d, release: make(chan struct{}), done: make(chan struct{})}
	pr, pw := io.Pipe()
	first, rest := d.split(head)
	go func() {
		defer close(s.done)
		go func() {
			if _, err := pw.Write(first); err != nil {
				return
			}
			select {
			case <-s.release:
			case <-ctx.Done():
				pw.CloseWithError(ctx.Err())
				return
			}
			_, err := pw.Write(rest)
			pw.CloseWithError(err)
		}()
		s.status, _, s.ans, s.err = c.ingest(ctx, table, pr)
		pr.CloseWithError(io.ErrClosedPipe)
	}()
	return s
}

// waitClientsWritten polls until each of clients has at least n readings
// of table stored: their requests are in flight in the server, past the
// first batch.
func waitClientsWritten(t *testing.T, c *apiClient, table string, clients []int, n int) {
	t.Helper()
	type row struct {
		C string `json:"c"`
		N int    `json:"n"`
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		rows, err := query[row](t.Context(), c, table,
			`SELECT substr(malo_id, 3, 1) AS c, count(*) AS n FROM readings_versions GROUP BY ALL`)
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]int{}
		for _, r := range rows {
			have[r.C] = r.N
		}
		ok := true
		for _, cl := range clients {
			ok = ok && have[fmt.Sprint(cl)] >= n
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the clients' first batches are not all written within 3 minutes: %v", have)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// batchRows is the server's atomic batch (ingest.DefaultBatchRows).
const batchRows = 10_000

// TestServeFaults runs the real binary through faults: SIGTERM and
// kill -9 during ingest and during archival, PostgreSQL stopped under a
// running server, and two replicas with the archiving one killed. After
// each, every acknowledged reading is stored exactly once.
func TestServeFaults(t *testing.T) {
	bin := buildBinary(t, t.TempDir())
	t.Run("sigterm-during-ingest", func(t *testing.T) { testSigtermDuringIngest(t, bin) })
	t.Run("kill-during-ingest", func(t *testing.T) { testKillDuringIngest(t, bin) })
	t.Run("sigterm-during-archival", func(t *testing.T) { testDuringArchival(t, bin, sigtermSignal) })
	t.Run("sigterm-during-archival-past-timeout", func(t *testing.T) { testDuringArchival(t, bin, sigtermPastTimeout) })
	t.Run("kill-during-archival", func(t *testing.T) { testDuringArchival(t, bin, killSignal) })
	t.Run("postgres-stopped", func(t *testing.T) { testPostgresStopped(t, bin) })
	t.Run("replicas", func(t *testing.T) { testReplicas(t, bin) })
}

// streamClients is how many clients stream at once, and streamMeters the
// market locations of each delivery: a little over two batches.
const (
	streamClients = 3
	streamMeters  = 260 // 20,800 readings: batches of 10,000, 10,000 and 800
)

// testSigtermDuringIngest: clients stop mid-body past their first batch,
// one of them with a bad line in its third batch; SIGTERM; the clients
// finish; every request is answered, 200 or, for the bad line, 422
// naming the batches written, and serve exits 0. After a restart every
// reading answered as stored is there exactly once, none of the refused
// batch is, and the check fails on a reading stored twice or lost.
func testSigtermDuringIngest(t *testing.T, bin string) {
	e := newFaultEnv(t, t.TempDir(), "")
	mustRun(t, "create", "-c", e.cfgPath)
	p := startServe(t, bin, e.cfgPath)
	c := newAPIClient(p.base, e.tok)
	l := newLedger()
	ctx := t.Context()

	var streams []*streamedIngest
	var clients []int
	for cl := range streamClients + 1 {
		d := makeDelivery(today(), meterBase(cl+1, 0), streamMeters)
		if cl == streamClients {
			d = d.withBadLine(2*batchRows + 100)
		}
		streams = append(streams, startStreamed(ctx, c, "power", d, batchRows+500))
		clients = append(clients, cl+1)
	}
	waitClientsWritten(t, c, "power", clients, batchRows)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.waitLog("shutting down", time.Minute)
	// New connections are refused now, within a bound; the requests in
	// flight go on.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(p.base + "/healthz")
		if err != nil {
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("serve still accepts connections 30 seconds after SIGTERM")
		}
	}
	for _, s := range streams {
		close(s.release)
	}
	for i, s := range streams {
		<-s.done
		l.record(s.d, s.status, s.ans, s.err)
		if i == streamClients {
			// The third batch, from line 20,002, is refused whole.
			if s.err != nil || s.status != http.StatusUnprocessableEntity || s.ans.Code != "refused" ||
				s.ans.WrittenThroughLine != 2*batchRows+1 || s.ans.Inserted != 2*batchRows {
				t.Errorf("a request with a bad line in flight at SIGTERM: %d %+v %v", s.status, s.ans, s.err)
			}
			continue
		}
		if s.err != nil || s.status != http.StatusOK || s.ans.Inserted != len(s.d.keys) || s.ans.Batches != 3 {
			t.Errorf("a request in flight at SIGTERM: %d %+v %v", s.status, s.ans, s.err)
		}
	}
	if code := p.wait(time.Minute); code != 0 {
		t.Fatalf("after SIGTERM: exit %d\n%s", code, p.stderr.String())
	}

	p = startServe(t, bin, e.cfgPath)
	c = newAPIClient(p.base, e.tok)
	checkStored(t, c, l, "power")
	got, err := c.storedCounts(ctx, "power")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range streams[streamClients].d.keys[2*batchRows:] {
		if got[k] != 0 {
			t.Fatalf("%v of the refused batch is stored", k)
		}
	}

	// The check is not blind: a second version of an acknowledged
	// reading, then a reading deleted behind the store's back, fail it.
	k := streams[0].d.keys[0]
	from := time.Unix(k.from, 0).UTC()
	fix := fmt.Sprintf("malo_id,obis_code,from,to,value,unit,quality,resolution,version,version_scope\n"+
		"%s,1-1:1.29.0,%s,%s,9.999,kWh,220,PT15M,2,9900000000003:%s\n",
		k.malo, from.Format(time.RFC3339), from.Add(15*time.Minute).Format(time.RFC3339), from.Format("2006-01"))
	if status, _, ans, err := c.ingest(ctx, "power", strings.NewReader(fix)); err != nil || status != 200 || ans.Superseded != 1 {
		t.Fatalf("a correction: %d %+v %v", status, ans, err)
	}
	if got, err = c.storedCounts(ctx, "power"); err != nil {
		t.Fatal(err)
	}
	if err := checkExactlyOnce(l.want, got); err == nil || !strings.Contains(err.Error(), k.String()+" stored 2 times") {
		t.Errorf("a reading with two versions: the check says %v", err)
	}
	conn, err := pgx.Connect(ctx, e.pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// Deleted as psql would; in the dictionary layout the readings name
	// their market location by series id.
	del := `DELETE FROM meterstore.power WHERE malo_id = $1`
	var dict bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('meterstore.power_series') IS NOT NULL`).Scan(&dict); err != nil {
		t.Fatal(err)
	}
	if dict {
		del = `DELETE FROM meterstore.power WHERE series IN (SELECT id FROM meterstore.power_series WHERE malo_id = $1)`
	}
	if _, err := conn.Exec(ctx, del, k.malo); err != nil {
		t.Fatal(err)
	}
	if got, err = c.storedCounts(ctx, "power"); err != nil {
		t.Fatal(err)
	}
	if err := checkExactlyOnce(l.want, got); err == nil || !strings.Contains(err.Error(), "acknowledged, missing") {
		t.Errorf("a market location deleted: the check says %v", err)
	}
	if code := p.terminate(time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s", code, p.stderr.String())
	}
}

// testKillDuringIngest: deliveries acknowledged, then clients stopped
// mid-body past their first batch, then kill -9. After a restart the
// acknowledged readings are there exactly once and the unanswered ones at
// most once; sent again, every reading is there exactly once, and
// meterstore verify passes.
func testKillDuringIngest(t *testing.T, bin string) {
	e := newFaultEnv(t, t.TempDir(), "")
	mustRun(t, "create", "-c", e.cfgPath)
	p := startServe(t, bin, e.cfgPath)
	c := newAPIClient(p.base, e.tok)
	l := newLedger()
	ctx := t.Context()

	var wg sync.WaitGroup
	for cl := range streamClients {
		wg.Go(func() {
			d := makeDelivery(today(), meterBase(cl+1, 0), 50)
			if status, ans, err := c.send(ctx, l, "power", d); err != nil || status != 200 {
				t.Errorf("ingest: %d %+v %v", status, ans, err)
			}
		})
	}
	wg.Wait()
	var streams []*streamedIngest
	var clients []int
	for cl := range streamClients {
		d := makeDelivery(today(), meterBase(cl+1, 1), streamMeters)
		streams = append(streams, startStreamed(ctx, c, "power", d, batchRows+500))
		clients = append(clients, cl+1)
	}
	waitClientsWritten(t, c, "power", clients, 50*deliveryQuarterHours+batchRows)
	p.kill()
	for _, s := range streams {
		close(s.release)
		<-s.done
		l.record(s.d, s.status, s.ans, s.err)
		if s.err == nil {
			t.Errorf("a request in flight at kill -9 was answered: %d %+v", s.status, s.ans)
		}
	}

	p = startServe(t, bin, e.cfgPath)
	c = newAPIClient(p.base, e.tok)
	checkStored(t, c, l, "power")
	for _, s := range streams {
		status, ans, err := c.send(ctx, l, "power", s.d)
		// The first batch was committed before the kill: sent again, it
		// is present, not inserted twice.
		if err != nil || status != 200 || ans.Present < batchRows || ans.Inserted+ans.Present != len(s.d.keys) {
			t.Errorf("the interrupted delivery sent again: %d %+v %v", status, ans, err)
		}
	}
	checkStored(t, c, l, "power")
	if code := p.terminate(time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s", code, p.stderr.String())
	}
	mustRun(t, "verify", "-c", e.cfgPath)
}

// archivalDays is how many days of readings the archival tests write,
// and archivalMeters the market locations of each day.
const (
	archivalDays   = 10
	archivalMeters = 40
)

// archivalEnv makes a deployment whose tables begin 60 days ago, with
// archivalDays of readings from then on written by meterstore ingest:
// with the settlement lag of 45 days, the first maintenance cycle of a
// serve has 15 windows to archive. It returns the env, the ledger of what
// was written, and the watermark once every written day is archived.
func archivalEnv(t *testing.T, pgURL string, edits ...string) (*faultEnv, *ledger, time.Time) {
	t.Helper()
	e := newFaultEnv(t, t.TempDir(), pgURL, append([]string{`headroom = "7d"`, `headroom = "14d"`}, edits...)...)
	base := today().AddDate(0, 0, -60)
	mustRun(t, "create", "-c", e.cfgPath, "--now", base.Format(time.RFC3339))
	mustRun(t, "create", "-c", e.cfgPath)
	l := newLedger()
	for day := range archivalDays {
		d := makeDelivery(base.AddDate(0, 0, day), meterBase(day%9+1, day/9), archivalMeters)
		path := filepath.Join(e.dir, fmt.Sprintf("day%d.csv", day))
		if err := os.WriteFile(path, d.body, 0o644); err != nil {
			t.Fatal(err)
		}
		mustRun(t, "ingest", "-c", e.cfgPath, "--table", "power", path)
		l.record(d, http.StatusOK, ingestAnswer{}, nil)
	}
	return e, l, base.AddDate(0, 0, archivalDays)
}

// waitWatermark polls GET /v1/status until table's watermark is at least
// w, for at most limit.
func waitWatermark(t *testing.T, c *apiClient, table string, w time.Time, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		st, err := tableStatusOf(t.Context(), c, table)
		if err != nil {
			t.Fatal(err)
		}
		if st.Watermark != nil && !st.Watermark.Before(w) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: watermark %v after %v, want %v or later", table, st.Watermark, limit, w)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// statusRow is a table of GET /v1/status.
type statusRow struct {
	Table     string     `json:"table"`
	Watermark *time.Time `json:"watermark"`
	Healthy   bool       `json:"healthy"`
	Error     string     `json:"error"`
}

func tableStatusOf(ctx context.Context, c *apiClient, table string) (statusRow, error) {
	resp, err := c.do(ctx, "GET", "/v1/status", "", nil)
	if err != nil {
		return statusRow{}, err
	}
	defer resp.Body.Close()
	var body struct {
		Tables []statusRow `json:"tables"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &body); err != nil || resp.StatusCode != 200 {
		return statusRow{}, fmt.Errorf("status: %d %s: %v", resp.StatusCode, b, err)
	}
	for _, st := range body.Tables {
		if st.Table == table {
			return st, nil
		}
	}
	return statusRow{}, fmt.Errorf("status: no table %s in %s", table, b)
}

// How a test ends a serve mid-archival.
type ending int

const (
	// sigtermSignal: SIGTERM, and the cycle finishes, then exit 0.
	sigtermSignal ending = iota
	// sigtermPastTimeout: SIGTERM with a server.shutdown_timeout of 10ms,
	// which the cycle outlasts: exit 1, the cycle cut off mid-window.
	sigtermPastTimeout
	// killSignal: kill -9.
	killSignal
)

// testDuringArchival: serve's first maintenance cycle archives; during its
// third window, serve is ended as how says. A new serve finishes or
// resumes the archival; every reading is there exactly once across the
// tiers and meterstore verify passes.
func testDuringArchival(t *testing.T, bin string, how ending) {
	var edits []string
	if how == sigtermPastTimeout {
		edits = []string{`shutdown_timeout = "30s"`, `shutdown_timeout = "10ms"`}
	}
	e, l, w := archivalEnv(t, "", edits...)
	p := startServe(t, bin, e.cfgPath, "-v")
	signalMidWindow(t, p, how)
	log := p.stderr.String()
	before, after, _ := strings.Cut(log, "shutting down")
	t.Logf("windows archived before the signal: %d, after: %d", strings.Count(before, archived),
		strings.Count(after, archived))
	if how == sigtermSignal && !strings.Contains(after, archived) {
		t.Errorf("no window archived after SIGTERM: the signal did not come during the cycle\n%s", log)
	}

	if how == sigtermPastTimeout {
		// The restarted serve may be mid-cycle when it is stopped below:
		// give it the time to finish.
		editConfig(t, e.cfgPath, `shutdown_timeout = "10ms"`, `shutdown_timeout = "30s"`)
	}
	p = startServe(t, bin, e.cfgPath, "-v")
	restarted := p
	defer func() {
		if t.Failed() {
			t.Logf("the restarted serve's log:\n%s", restarted.stderr.String())
		}
	}()
	c := newAPIClient(p.base, e.tok)
	waitWatermark(t, c, "power", w, 2*time.Minute)
	checkStored(t, c, l, "power")
	if code := p.terminate(time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s", code, p.stderr.String())
	}
	log = p.stderr.String()
	t.Logf("windows archived after the restart: %d, resumed: %d", strings.Count(log, archived),
		strings.Count(log, "recovered=true"))
	if how != sigtermSignal && !strings.Contains(log, archived) {
		t.Errorf("the restarted serve archived nothing: the cycle was not cut off\n%s", log)
	}
	mustRun(t, "verify", "-c", e.cfgPath)
}

// archived is the log line of an archived window of power.
const archived = `msg="archive: window archived" table=power`

// signalMidWindow waits for p's second archived window, then, half the
// time the second took later (within the third window, most likely), ends
// p as how says and waits for the exit status that calls for.
func signalMidWindow(t *testing.T, p *serveProc, how ending) {
	t.Helper()
	p.waitLog(archived, 2*time.Minute)
	first := time.Now()
	p.waitLogCount(archived, 2, 2*time.Minute)
	time.Sleep(time.Since(first) / 2)
	if how == killSignal {
		p.kill()
		return
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code := p.wait(2 * time.Minute)
	switch {
	case how == sigtermSignal && code != 0:
		t.Fatalf("SIGTERM during archival: exit %d\n%s", code, p.stderr.String())
	case how == sigtermPastTimeout && (code != exitPermanent ||
		!strings.Contains(p.stderr.String(), "the maintenance cycle in flight did not finish within server.shutdown_timeout")):
		t.Fatalf("SIGTERM during archival with a cycle past the shutdown timeout: exit %d\n%s", code, p.stderr.String())
	}
}

// editConfig replaces old by new in the configuration at path, once;
// old must be there.
func editConfig(t *testing.T, path, old, new string) {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), old) {
		t.Fatalf("%s has no %q", path, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(text), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

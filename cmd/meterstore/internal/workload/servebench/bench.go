// Package servebench measures meterstore serve as its clients see it:
// concurrent ingest and query clients over HTTP on 127.0.0.1 against one
// serve, a child process, beside the in-process baseline of calling
// store.Store.Write with the same batches in the same run, and a count at
// the end that every acknowledged reading is stored exactly once.
package servebench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/workload/hotbench"
	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/store"
)

// Config configures a run.
type Config struct {
	// Binary is the meterstore executable whose serve is measured.
	Binary string
	// PgURL is the PostgreSQL database of the deployment; the run works in
	// a schema of its own and drops it at the end.
	PgURL string
	// Fixture is the first day's deliveries, written in process and over
	// HTTP alike; the next day's, the same meters, go over HTTP under query
	// load. A zero Day means two days before today in Berlin: a day past
	// archive.settlement_lag would be archived, and its rows routed to the
	// cold tier, which is not what this measures.
	Fixture hotbench.Fixture
	// IngestClients and QueryClients are the concurrent clients of each
	// kind; the baseline writes with IngestClients goroutines.
	IngestClients, QueryClients int
	// Rounds is how many turns the baseline and the HTTP clients take on
	// the first day, alternating who goes first, so that whatever else
	// loads the machine falls on both alike.
	Rounds int
	// QueryFor is how long the query clients start queries alone; those
	// in flight at its end are finished.
	QueryFor time.Duration
	// MaxRows is the deployment's query.max_rows.
	MaxRows int
	// LargeResult adds a query whose answer, every reading stored, is much
	// larger than MaxRows: it needs POST /v1/query to stream, and fails
	// with 413 (result_too_large) while the server holds a result whole.
	LargeResult bool
	// Dir holds the deployment's files; empty means a temporary directory,
	// removed at the end.
	Dir    string
	Logger *slog.Logger

	// dropEvery makes the HTTP ingest a broken client (httpClient.dropEvery).
	dropEvery int
}

// DefaultConfig is small enough to finish in a minute or two on two cores.
func DefaultConfig() Config {
	f := hotbench.DefaultFixture()
	f.Day = metering.Date{}
	f.Meters = 2_000
	return Config{Fixture: f, IngestClients: 4, QueryClients: 2, Rounds: 4, QueryFor: 15 * time.Second, MaxRows: 20_000}
}

// Ingest is one way of writing a day's deliveries.
type Ingest struct {
	Name           string  `json:"name"`
	Readings       int64   `json:"readings"` // acknowledged
	Batches        int64   `json:"batches"`
	Seconds        float64 `json:"seconds"` // wall time of the writes
	ReadingsPerSec float64 `json:"readings_per_sec"`
	// Ratio is ReadingsPerSec over that of the in-process Write.
	Ratio   float64 `json:"ratio_to_write"`
	Retries int64   `json:"retries_503"`
	// PeakRSS is serve's peak resident set in bytes over the phase, 0 for
	// the in-process baseline.
	PeakRSS int64 `json:"serve_peak_rss_bytes"`
}

// Queries is the query clients' measurement over one phase.
type Queries struct {
	Name       string  `json:"name"`
	Clients    int     `json:"clients"`
	Seconds    float64 `json:"seconds"`
	Answers    int     `json:"answers"` // complete and right
	PerSec     float64 `json:"answers_per_sec"`
	Rows       int64   `json:"rows_per_answer"`
	P50ms      float64 `json:"p50_ms"`
	P99ms      float64 `json:"p99_ms"`
	Maxms      float64 `json:"max_ms"`
	Errors     int     `json:"errors"`
	FirstError string  `json:"first_error,omitempty"`
	PeakRSS    int64   `json:"serve_peak_rss_bytes"`
}

// Large is the query whose result is larger than query.max_rows.
type Large struct {
	Status  int     `json:"status"`
	Rows    int64   `json:"rows"`
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	Error   string  `json:"error,omitempty"`
	PeakRSS int64   `json:"serve_peak_rss_bytes"`
}

// Count is the end-of-run check of one table: every acknowledged reading
// stored exactly once.
type Count struct {
	Table        string `json:"table"`
	Acknowledged int64  `json:"acknowledged"` // readings in acknowledged batches
	Inserted     int64  `json:"inserted"`     // readings the acknowledgements call stored anew: inserted, superseded or shadowed
	Stored       int64  `json:"stored"`       // rows in the table at the end
}

// OK reports whether the table holds exactly the readings acknowledged,
// each acknowledged as stored anew (inserted, or a correction that
// superseded or is shadowed by another version), none as present.
func (c Count) OK() bool { return c.Stored == c.Acknowledged && c.Inserted == c.Acknowledged }

// A CountError is a run whose count check failed: readings acknowledged
// and lost, or stored more than once.
type CountError struct{ Counts []Count }

func (e *CountError) Error() string {
	var bad []string
	for _, c := range e.Counts {
		if !c.OK() {
			bad = append(bad, fmt.Sprintf("%s: %d readings acknowledged (%d as inserted), %d stored",
				c.Table, c.Acknowledged, c.Inserted, c.Stored))
		}
	}
	return "servebench: count check failed: " + strings.Join(bad, "; ")
}

// Result is the outcome of a run.
type Result struct {
	Server        string           `json:"server"`
	GOMAXPROCS    int              `json:"gomaxprocs"`
	Fixture       hotbench.Fixture `json:"fixture"`
	IngestClients int              `json:"ingest_clients"`
	QueryClients  int              `json:"query_clients"`
	Rounds        int              `json:"rounds"`
	MaxRows       int              `json:"query_max_rows"`
	// Readings and Batches are one day's deliveries.
	Readings int       `json:"readings_per_day"`
	Batches  int       `json:"batches_per_day"`
	QuerySQL string    `json:"query_sql"`
	Ingest   []Ingest  `json:"ingest"`  // Write, HTTP alone, HTTP under query load
	Queries  []Queries `json:"queries"` // alone, under ingest load
	Large    *Large    `json:"large_result,omitempty"`
	// IdleRSS is serve's peak resident set once it serves, before the
	// first request; PeakRSS its peak over the whole run.
	IdleRSS int64 `json:"serve_idle_rss_bytes"`
	PeakRSS int64 `json:"serve_peak_rss_bytes"`
	// PhaseRSS is whether the phases' peaks are their own; if the kernel
	// refused to reset the peak, each is the peak since the start.
	PhaseRSS bool    `json:"phase_rss"`
	Counts   []Count `json:"counts"`
}

// The names of the phases.
const (
	WriteInProcess = "Write, in process"
	HTTPAlone      = "HTTP POST, alone"
	HTTPLoaded     = "HTTP POST, under query load"
	QueriesAlone   = "alone"
	QueriesLoaded  = "under ingest load"
)

// startTimeout bounds how long serve may take to listen; stopTimeout how
// long it may take to exit after SIGTERM (server.shutdown_timeout is 30s).
const (
	startTimeout = 2 * time.Minute
	stopTimeout  = 45 * time.Second
)

// Run starts serve on a deployment of its own in PgURL and measures, in
// this order: the first day written by the in-process baseline and by the
// HTTP clients in alternating rounds; the query clients alone on that day;
// the next day over HTTP while the query clients go on; optionally the
// large result. Then it counts both tables. A failed count check returns
// the result with a *CountError.
func Run(ctx context.Context, cfg Config) (res *Result, err error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Binary == "" || cfg.PgURL == "" || cfg.IngestClients < 1 || cfg.QueryClients < 0 || cfg.Rounds < 1 || cfg.MaxRows < 1 {
		return nil, fmt.Errorf("servebench: invalid configuration: binary %q, %d ingest and %d query clients, %d rounds, max rows %d",
			cfg.Binary, cfg.IngestClients, cfg.QueryClients, cfg.Rounds, cfg.MaxRows)
	}
	cal, err := metering.NewCalendar()
	if err != nil {
		return nil, err
	}
	if cfg.Fixture.Day == (metering.Date{}) {
		cfg.Fixture.Day = cal.LocalDay(time.Now()).AddDays(-2)
	}
	day2 := cfg.Fixture
	day2.Day, day2.Seed = cfg.Fixture.Day.AddDays(1), cfg.Fixture.Seed+1
	first, err := batches(cfg.Fixture, cal)
	if err != nil {
		return nil, err
	}
	if cfg.Fixture.Meters > cfg.MaxRows {
		return nil, fmt.Errorf("servebench: %d meters: the daily totals would pass query.max_rows %d", cfg.Fixture.Meters, cfg.MaxRows)
	}
	res = &Result{GOMAXPROCS: runtime.GOMAXPROCS(0), Fixture: cfg.Fixture, IngestClients: cfg.IngestClients,
		QueryClients: cfg.QueryClients, Rounds: cfg.Rounds, MaxRows: cfg.MaxRows, Batches: len(first)}
	for _, b := range first {
		res.Readings += len(b.rows)
	}

	dir := cfg.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "meterstore-bench-serve-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	}
	pool, err := pgxpool.New(ctx, cfg.PgURL)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	if err := pool.QueryRow(ctx, `SHOW server_version`).Scan(&res.Server); err != nil {
		return nil, err
	}
	schema := fmt.Sprintf("meterstore_bench_serve_%d", time.Now().UnixNano())
	defer func() {
		if _, err := pool.Exec(context.WithoutCancel(ctx), `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			log.Warn("servebench: dropping the bench schema", "schema", schema, "err", err)
		}
	}()
	dep, err := writeDeployment(dir, cfg.PgURL, schema, cfg.MaxRows)
	if err != nil {
		return nil, err
	}
	dcfg, err := config.Load(dep.path)
	if err != nil {
		return nil, err
	}
	// The baseline's store, opened first: it declares both tables, so
	// serve finds them, and creates the partitions of both days.
	s, err := store.OpenConfig(ctx, dcfg, log)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if err := s.CreatePartitions(ctx, cal.DayStart(cfg.Fixture.Day), cal.DayEnd(day2.Day).Add(-time.Microsecond)); err != nil {
		return nil, err
	}

	srv, err := startServer(ctx, cfg.Binary, dep.path, startTimeout)
	if err != nil {
		return nil, err
	}
	defer func() {
		if stopErr := srv.stop(stopTimeout); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
	}()
	if res.IdleRSS, err = srv.peakRSS(); err != nil {
		return nil, err
	}
	res.PeakRSS = res.IdleRSS
	client := &httpClient{base: srv.base, token: dep.token, dropEvery: cfg.dropEvery,
		c: &http.Client{Timeout: 10 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: cfg.IngestClients + cfg.QueryClients + 1}}}
	// phase measures serve's peak over what f does.
	res.PhaseRSS = true
	phase := func(f func() error) (int64, error) {
		if !srv.resetPeak() {
			res.PhaseRSS = false
		}
		err := f()
		peak, rssErr := srv.peakRSS()
		res.PeakRSS = max(res.PeakRSS, peak)
		return peak, errors.Join(err, rssErr)
	}

	if _, err := pool.Exec(ctx, `CHECKPOINT`); err != nil {
		log.Info("servebench: no checkpoint before the run (needs superuser or pg_checkpoint)", "err", err)
	}
	// The first day, in rounds: in process, then over HTTP, then the
	// other way round.
	var inProc, overHTTP, loaded tally
	var inProcTime, httpTime time.Duration
	write := writeInProcess(s, inProcTable, &inProc)
	post := client.ingest(httpTable, &overHTTP)
	httpPeak, err := phase(func() error {
		for r := range cfg.Rounds {
			chunk := first[r*len(first)/cfg.Rounds : (r+1)*len(first)/cfg.Rounds]
			encode(chunk)
			for k := range 2 {
				if (r+k)%2 == 0 {
					d, err := parallel(ctx, cfg.IngestClients, chunk, write)
					if inProcTime += d; err != nil {
						return err
					}
				} else {
					d, err := parallel(ctx, cfg.IngestClients, chunk, post)
					if httpTime += d; err != nil {
						return err
					}
				}
			}
			for i := range chunk {
				chunk[i].body = nil // only one round's bodies at a time
			}
			log.Info("servebench: round done", "round", r+1, "of", cfg.Rounds)
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	res.Ingest = append(res.Ingest, ingestOf(WriteInProcess, &inProc, inProcTime, 0), ingestOf(HTTPAlone, &overHTTP, httpTime, httpPeak))

	from, to := cal.DayStart(cfg.Fixture.Day), cal.DayEnd(cfg.Fixture.Day)
	res.QuerySQL = fmt.Sprintf(`SELECT malo_id, balancing_day, sum(value) AS kwh FROM readings `+
		`WHERE "from" >= %s AND "from" < %s GROUP BY malo_id, balancing_day ORDER BY malo_id`, lit(from), lit(to))
	wantRows := int64(cfg.Fixture.Meters)
	if cfg.QueryClients > 0 {
		var alone Queries
		alone.PeakRSS, err = phase(func() error {
			until, cancel := context.WithTimeout(ctx, cfg.QueryFor)
			defer cancel()
			alone = client.queryLoad(ctx, until.Done(), cfg.QueryClients, httpTable, res.QuerySQL, wantRows)
			return ctx.Err()
		})
		if err != nil {
			return res, err
		}
		alone.Name = QueriesAlone
		res.Queries = append(res.Queries, alone)
		log.Info("servebench: queries alone done", "answers", alone.Answers)
	}

	// The next day over HTTP while the query clients go on asking about
	// the first.
	second, err := batches(day2, cal)
	if err != nil {
		return res, err
	}
	encode(second)
	var under Queries
	var loadedTime time.Duration
	loadedPeak, err := phase(func() error {
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			if cfg.QueryClients > 0 {
				under = client.queryLoad(ctx, stop, cfg.QueryClients, httpTable, res.QuerySQL, wantRows)
			}
		}()
		var err error
		loadedTime, err = parallel(ctx, cfg.IngestClients, second, client.ingest(httpTable, &loaded))
		close(stop)
		<-done
		return err
	})
	if err != nil {
		return res, err
	}
	res.Ingest = append(res.Ingest, ingestOf(HTTPLoaded, &loaded, loadedTime, loadedPeak))
	if cfg.QueryClients > 0 {
		under.Name, under.PeakRSS = QueriesLoaded, loadedPeak
		res.Queries = append(res.Queries, under)
	}
	for i := range res.Ingest {
		res.Ingest[i].Ratio = res.Ingest[i].ReadingsPerSec / res.Ingest[0].ReadingsPerSec
	}
	second = nil
	log.Info("servebench: ingest under query load done")

	if cfg.LargeResult {
		res.Large = &Large{}
		res.Large.PeakRSS, err = phase(func() error {
			a := client.query(ctx, httpTable, `SELECT * FROM readings_versions`)
			res.Large.Status, res.Large.Rows, res.Large.Bytes, res.Large.Seconds, res.Large.Error =
				a.status, a.rows, a.bytes, a.took.Seconds(), a.err
			return ctx.Err()
		})
		if err != nil {
			return res, err
		}
	}

	// Nothing may have been archived: the count is of the hot tables.
	for _, t := range []string{inProcTable, httpTable} {
		if _, ok, err := s.Watermark(ctx, t); err != nil {
			return res, err
		} else if ok {
			return res, fmt.Errorf("servebench: table %s has a watermark: the fixture's days were archived; choose a day within archive.settlement_lag", t)
		}
	}
	for _, c := range []struct {
		table string
		t     []*tally
	}{{inProcTable, []*tally{&inProc}}, {httpTable, []*tally{&overHTTP, &loaded}}} {
		n := Count{Table: c.table}
		for _, t := range c.t {
			n.Acknowledged += t.acked.Load()
			n.Inserted += t.inserted.Load()
		}
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, c.table}.Sanitize()).Scan(&n.Stored); err != nil {
			return res, fmt.Errorf("servebench: counting %s: %w", c.table, err)
		}
		res.Counts = append(res.Counts, n)
	}
	for _, c := range res.Counts {
		if !c.OK() {
			return res, &CountError{Counts: res.Counts}
		}
	}
	if l := res.Large; l != nil {
		if want := res.Counts[1].Stored; l.Error == "" && l.Rows != want {
			l.Error = fmt.Sprintf("%d rows, want %d", l.Rows, want)
		}
		if l.Error != "" {
			return res, fmt.Errorf("servebench: the large result (it needs POST /v1/query to stream): %s", l.Error)
		}
	}
	return res, nil
}

// batches returns the deliveries of f.
func batches(f hotbench.Fixture, cal *metering.Calendar) ([]batch, error) {
	gen, err := f.Start(cal)
	if err != nil {
		return nil, err
	}
	var out []batch
	for rows := gen.Next(); rows != nil; rows = gen.Next() {
		out = append(out, batch{rows: rows})
	}
	return out, nil
}

// encode sets the CSV body of every batch, before the clock runs: the
// bench measures the server reading deliveries, not itself writing them.
func encode(bs []batch) {
	for i := range bs {
		bs[i].body = encodeCSV(bs[i].rows)
	}
}

func ingestOf(name string, t *tally, took time.Duration, peak int64) Ingest {
	in := Ingest{Name: name, Readings: t.acked.Load(), Batches: t.batches.Load(), Seconds: took.Seconds(),
		Retries: t.retries.Load(), PeakRSS: peak}
	if took > 0 {
		in.ReadingsPerSec = float64(in.Readings) / took.Seconds()
	}
	return in
}

// lit is t as a DuckDB TIMESTAMPTZ literal.
func lit(t time.Time) string {
	return "TIMESTAMPTZ '" + t.UTC().Format("2006-01-02 15:04:05") + "+00'"
}

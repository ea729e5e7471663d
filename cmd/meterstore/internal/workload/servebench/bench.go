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
	"sync"
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
	// HTTP alike; the next day's, the same meters, are written both ways
	// again under query load. A zero Day means two days before today in Berlin: a day past
	// archive.settlement_lag would be archived, and its rows routed to the
	// cold tier, which is not what this measures.
	Fixture hotbench.Fixture
	// IngestClients and QueryClients are the concurrent clients of each
	// kind; the baseline writes with IngestClients goroutines.
	IngestClients, QueryClients int
	// Rounds is how many turns the baseline and the HTTP clients take on
	// each day, alternating who goes first, so that whatever else loads
	// the machine falls on both alike.
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
	// Portal adds the portal workload: PortalClients clients asking random
	// meters' first day over serve's typed series resource, alone and
	// while the next day is ingested, and the same clients asking
	// PostgreSQL alone for the same resolved readings through pgx, a
	// prepared statement, in turns with the typed reads alone.
	Portal        bool
	PortalClients int
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
	return Config{Fixture: f, IngestClients: 4, QueryClients: 2, PortalClients: 8, Rounds: 4, QueryFor: 15 * time.Second, MaxRows: 20_000}
}

// Ingest is one way of writing a day's deliveries.
type Ingest struct {
	Name           string  `json:"name"`
	Readings       int64   `json:"readings"` // acknowledged
	Batches        int64   `json:"batches"`
	Seconds        float64 `json:"seconds"` // wall time of the writes
	ReadingsPerSec float64 `json:"readings_per_sec"`
	// Ratio is ReadingsPerSec over that of Baseline: for HTTP, the
	// in-process Write under the same load; for Write under query load,
	// Write alone.
	Ratio    float64 `json:"ratio_to_write"`
	Baseline string  `json:"baseline"`
	// RatioAlone is ReadingsPerSec over that of the in-process Write
	// alone, whatever the load: for HTTP under query load, the ratio
	// issue 52 first stated, which measures the load as well as HTTP.
	RatioAlone float64 `json:"ratio_to_write_alone"`
	Retries    int64   `json:"retries_503"`
	// PeakRSS is serve's peak resident set in bytes over the phase, 0 for
	// the in-process Write alone (serve idles).
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
	Ingest   []Ingest  `json:"ingest"`  // Write and HTTP alone, Write and HTTP under query load
	Queries  []Queries `json:"queries"` // alone, under ingest load
	Large    *Large    `json:"large_result,omitempty"`
	// Wire is the large result through each protocol, with LargeResult;
	// Point a point query's latency over HTTP and the PostgreSQL protocol.
	Wire  []Wire `json:"wire,omitempty"`
	Point *Point `json:"point_query,omitempty"`
	// IdleRSS is serve's peak resident set once it serves, before the
	// first request; PeakRSS its peak over the whole run.
	IdleRSS int64 `json:"serve_idle_rss_bytes"`
	PeakRSS int64 `json:"serve_peak_rss_bytes"`
	// PhaseRSS is whether the phases' peaks are their own; if the kernel
	// refused to reset the peak, each is the peak since the start.
	PhaseRSS bool    `json:"phase_rss"`
	Counts   []Count `json:"counts"`
	// Portal is the portal workload, with Portal: the typed reads alone,
	// PostgreSQL alone, the typed reads under ingest load. PortalSQL is
	// PostgreSQL's statement.
	Portal    []Queries `json:"portal,omitempty"`
	PortalSQL string    `json:"portal_postgres_sql,omitempty"`
	// PortalQPSvsPostgres is the typed reads' answers a second alone over
	// PostgreSQL's (goal: at least 0.5); PortalP99UnderIngest their p99
	// under ingest load (goal: at most 50 ms).
	PortalQPSvsPostgres  float64 `json:"portal_qps_vs_postgres,omitempty"`
	PortalP99UnderIngest float64 `json:"portal_p99_ms_under_ingest,omitempty"`
}

// The names of the phases.
const (
	WriteInProcess = "Write, in process"
	HTTPAlone      = "HTTP POST, alone"
	WriteLoaded    = "Write, in process, under query load"
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
// with Portal, the portal clients alone, in turns with PostgreSQL; the
// next day the same way while the query and portal clients go on; optionally the
// large result. Then it counts both tables. A failed count check returns
// the result with a *CountError.
func Run(ctx context.Context, cfg Config) (res *Result, err error) {
	r, err := newRun(cfg)
	if err != nil {
		return nil, err
	}
	defer r.close()
	if err := r.open(ctx); err != nil {
		return nil, err
	}
	err = r.startServer(ctx)
	if r.srv != nil {
		defer func() {
			if stopErr := r.srv.stop(stopTimeout); stopErr != nil {
				err = errors.Join(err, stopErr)
			}
		}()
	}
	if err != nil {
		return nil, err
	}
	for _, step := range []func(context.Context) error{r.firstDay, r.queriesAlone, r.portalAlone, r.secondDay, r.largeResult, r.count, r.wire} {
		if err := step(ctx); err != nil {
			return r.res, err
		}
	}
	return r.res, nil
}

// A run is the state of one Run, each step a method: what it measured so
// far (res), what it opened, and the tallies of the ingest clients.
type run struct {
	cfg   Config
	log   *slog.Logger
	cal   *metering.Calendar
	res   *Result
	day2  hotbench.Fixture // the next day's deliveries
	first []batch          // the first day's

	closers []func() // what close undoes, in order of opening
	dep     *deployment
	pool    *pgxpool.Pool
	schema  string
	s       *store.Store // the in-process baseline's
	srv     *server
	client  *httpClient
	portal  *portal // with Portal, once portalAlone has run

	inProc, overHTTP, inProcLoaded, loaded tally
	wantRows                               int64 // of the query clients' statement
}

// newRun checks cfg and makes the first day's deliveries.
func newRun(cfg Config) (*run, error) {
	r := &run{cfg: cfg, log: cfg.Logger}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if cfg.Binary == "" || cfg.PgURL == "" || cfg.IngestClients < 1 || cfg.QueryClients < 0 || cfg.Portal && cfg.PortalClients < 1 || cfg.Rounds < 1 || cfg.MaxRows < 1 {
		return nil, fmt.Errorf("servebench: invalid configuration: binary %q, %d ingest and %d query clients, %d rounds, max rows %d",
			cfg.Binary, cfg.IngestClients, cfg.QueryClients, cfg.Rounds, cfg.MaxRows)
	}
	var err error
	if r.cal, err = metering.NewCalendar(); err != nil {
		return nil, err
	}
	if r.cfg.Fixture.Day == (metering.Date{}) {
		r.cfg.Fixture.Day = r.cal.LocalDay(time.Now()).AddDays(-2)
	}
	r.day2 = r.cfg.Fixture
	r.day2.Day, r.day2.Seed = r.cfg.Fixture.Day.AddDays(1), r.cfg.Fixture.Seed+1
	if r.first, err = batches(r.cfg.Fixture, r.cal); err != nil {
		return nil, err
	}
	if cfg.Fixture.Meters > cfg.MaxRows {
		return nil, fmt.Errorf("servebench: %d meters: the daily totals would pass query.max_rows %d", cfg.Fixture.Meters, cfg.MaxRows)
	}
	r.res = &Result{GOMAXPROCS: runtime.GOMAXPROCS(0), Fixture: r.cfg.Fixture, IngestClients: cfg.IngestClients,
		QueryClients: cfg.QueryClients, Rounds: cfg.Rounds, MaxRows: cfg.MaxRows, Batches: len(r.first)}
	for _, b := range r.first {
		r.res.Readings += len(b.rows)
	}
	return r, nil
}

// close undoes what open opened, the last first.
func (r *run) close() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
}

// open makes the run's directory, its schema in PgURL and the deployment's
// configuration, and opens the baseline's store, which declares both
// tables, so that serve finds them, and creates the partitions of both
// days.
func (r *run) open(ctx context.Context) error {
	dir := r.cfg.Dir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "meterstore-bench-serve-"); err != nil {
			return err
		}
		r.closers = append(r.closers, func() { os.RemoveAll(dir) })
	}
	pool, err := pgxpool.New(ctx, r.cfg.PgURL)
	if err != nil {
		return err
	}
	r.pool = pool
	r.closers = append(r.closers, pool.Close)
	if err := pool.QueryRow(ctx, `SHOW server_version`).Scan(&r.res.Server); err != nil {
		return err
	}
	r.schema = fmt.Sprintf("meterstore_bench_serve_%d", time.Now().UnixNano())
	r.closers = append(r.closers, func() {
		if _, err := pool.Exec(context.WithoutCancel(ctx), `DROP SCHEMA IF EXISTS `+pgx.Identifier{r.schema}.Sanitize()+` CASCADE`); err != nil {
			r.log.Warn("servebench: dropping the bench schema", "schema", r.schema, "err", err)
		}
	})
	dep, err := writeDeployment(dir, r.cfg.PgURL, r.schema, r.cfg.MaxRows)
	if err != nil {
		return err
	}
	dcfg, err := config.Load(dep.path)
	if err != nil {
		return err
	}
	if r.s, err = store.OpenConfig(ctx, dcfg, r.log); err != nil {
		return err
	}
	r.closers = append(r.closers, r.s.Close)
	if err := r.s.CreatePartitions(ctx, r.cal.DayStart(r.cfg.Fixture.Day), r.cal.DayEnd(r.day2.Day).Add(-time.Microsecond)); err != nil {
		return err
	}
	r.client = &httpClient{token: dep.token, dropEvery: r.cfg.dropEvery,
		c: &http.Client{Timeout: 10 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: r.cfg.IngestClients + r.cfg.QueryClients + r.cfg.PortalClients + 1}}}
	r.dep = dep
	return nil
}

// startServer starts serve and measures its resident set once it serves.
func (r *run) startServer(ctx context.Context) error {
	srv, err := startServer(ctx, r.cfg.Binary, r.dep.path, startTimeout)
	if err != nil {
		return err
	}
	r.srv = srv
	r.client.base = srv.base
	if r.res.IdleRSS, err = srv.peakRSS(); err != nil {
		return err
	}
	r.res.PeakRSS = r.res.IdleRSS
	r.res.PhaseRSS = true
	return nil
}

// phase measures serve's peak over what f does.
func (r *run) phase(f func() error) (int64, error) {
	if !r.srv.resetPeak() {
		r.res.PhaseRSS = false
	}
	err := f()
	peak, rssErr := r.srv.peakRSS()
	r.res.PeakRSS = max(r.res.PeakRSS, peak)
	return peak, errors.Join(err, rssErr)
}

// firstDay writes the first day in rounds: in process, then over HTTP,
// then the other way round.
func (r *run) firstDay(ctx context.Context) error {
	if _, err := r.pool.Exec(ctx, `CHECKPOINT`); err != nil {
		r.log.Info("servebench: no checkpoint before the run (needs superuser or pg_checkpoint)", "err", err)
	}
	var inProcTime, httpTime time.Duration
	httpPeak, err := r.phase(func() (err error) {
		inProcTime, httpTime, err = r.inTurns(ctx, r.first, &r.inProc, &r.overHTTP)
		return err
	})
	if err != nil {
		return err
	}
	write := ingestOf(WriteInProcess, &r.inProc, inProcTime, 0)
	r.res.Ingest = append(r.res.Ingest, write, ingestOf(HTTPAlone, &r.overHTTP, httpTime, httpPeak).vs(write).alone(write))
	return nil
}

// inTurns writes bs in r.cfg.Rounds rounds, each round's share once in
// process into inProcTable and once over HTTP into httpTable, alternating
// which goes first, so that whatever else loads the machine falls on both
// alike. It returns the wall time of each.
func (r *run) inTurns(ctx context.Context, bs []batch, inProc, overHTTP *tally) (inProcTime, httpTime time.Duration, err error) {
	write := writeInProcess(r.s, inProcTable, inProc)
	post := r.client.ingest(httpTable, overHTTP)
	rounds := r.cfg.Rounds
	for k := range rounds {
		chunk := bs[k*len(bs)/rounds : (k+1)*len(bs)/rounds]
		encode(chunk)
		for turn := range 2 {
			do, took := write, &inProcTime
			if (k+turn)%2 == 1 {
				do, took = post, &httpTime
			}
			d, err := parallel(ctx, r.cfg.IngestClients, chunk, do)
			if *took += d; err != nil {
				return inProcTime, httpTime, err
			}
		}
		for i := range chunk {
			chunk[i].body = nil // only one round's bodies at a time
		}
		r.log.Info("servebench: round done", "round", k+1, "of", rounds)
	}
	return inProcTime, httpTime, nil
}

// queriesAlone sets the query clients' statement, the daily totals of the
// first day, and runs them alone for QueryFor.
func (r *run) queriesAlone(ctx context.Context) error {
	from, to := r.cal.DayStart(r.cfg.Fixture.Day), r.cal.DayEnd(r.cfg.Fixture.Day)
	r.res.QuerySQL = fmt.Sprintf(`SELECT malo_id, balancing_day, sum(value) AS kwh FROM readings `+
		`WHERE "from" >= %s AND "from" < %s GROUP BY malo_id, balancing_day ORDER BY malo_id`, lit(from), lit(to))
	r.wantRows = int64(r.cfg.Fixture.Meters)
	if r.cfg.QueryClients == 0 {
		return nil
	}
	var alone Queries
	var err error
	alone.PeakRSS, err = r.phase(func() error {
		until, cancel := context.WithTimeout(ctx, r.cfg.QueryFor)
		defer cancel()
		alone = r.client.queryLoad(ctx, until.Done(), r.cfg.QueryClients, httpTable, r.res.QuerySQL, r.wantRows)
		return ctx.Err()
	})
	if err != nil {
		return err
	}
	alone.Name = QueriesAlone
	r.res.Queries = append(r.res.Queries, alone)
	r.log.Info("servebench: queries alone done", "answers", alone.Answers)
	return nil
}

// secondDay writes the next day as the first, in process and over HTTP
// in turns, while the query clients go on asking about the first: both
// ways of writing share the machine with the same queries, so that their
// ratio is HTTP's own cost under load, not the load's.
func (r *run) secondDay(ctx context.Context) error {
	second, err := batches(r.day2, r.cal)
	if err != nil {
		return err
	}
	var under Queries
	var portal *loopRun
	var inProcTime, loadedTime time.Duration
	loadedPeak, err := r.phase(func() error {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			if r.cfg.QueryClients > 0 {
				under = r.client.queryLoad(ctx, stop, r.cfg.QueryClients, httpTable, r.res.QuerySQL, r.wantRows)
			}
		})
		wg.Go(func() { portal = r.portalLoad(ctx, stop) })
		var err error
		inProcTime, loadedTime, err = r.inTurns(ctx, second, &r.inProcLoaded, &r.loaded)
		close(stop)
		wg.Wait()
		return err
	})
	if err != nil {
		return err
	}
	res := r.res
	write := ingestOf(WriteLoaded, &r.inProcLoaded, inProcTime, loadedPeak)
	alone := res.Ingest[0]
	res.Ingest = append(res.Ingest, write.vs(alone).alone(alone), ingestOf(HTTPLoaded, &r.loaded, loadedTime, loadedPeak).vs(write).alone(alone))
	if r.cfg.QueryClients > 0 {
		under.Name, under.PeakRSS = QueriesLoaded, loadedPeak
		res.Queries = append(res.Queries, under)
	}
	if portal != nil {
		p := summarize(r.cfg.PortalClients, *portal)
		p.Name, p.PeakRSS = PortalLoaded, loadedPeak
		res.Portal = append(res.Portal, p)
		res.PortalP99UnderIngest = p.P99ms
	}
	r.log.Info("servebench: ingest under query load done")
	return nil
}

// largeResult, if asked for, reads every reading stored over HTTP at once.
func (r *run) largeResult(ctx context.Context) error {
	if !r.cfg.LargeResult {
		return nil
	}
	l := &Large{}
	r.res.Large = l
	var err error
	l.PeakRSS, err = r.phase(func() error {
		a := r.client.query(ctx, httpTable, `SELECT * FROM readings_versions`)
		l.Status, l.Rows, l.Bytes, l.Seconds, l.Error = a.status, a.rows, a.bytes, a.took.Seconds(), a.err
		return ctx.Err()
	})
	return err
}

// count checks that nothing was archived, then that each table stores
// every reading acknowledged once, and that the large result had them all.
func (r *run) count(ctx context.Context) error {
	res := r.res
	// Nothing may have been archived: the count is of the hot tables.
	for _, t := range []string{inProcTable, httpTable} {
		if _, ok, err := r.s.Watermark(ctx, t); err != nil {
			return err
		} else if ok {
			return fmt.Errorf("servebench: table %s has a watermark: the fixture's days were archived; choose a day within archive.settlement_lag", t)
		}
	}
	for _, c := range []struct {
		table string
		t     []*tally
	}{{inProcTable, []*tally{&r.inProc, &r.inProcLoaded}}, {httpTable, []*tally{&r.overHTTP, &r.loaded}}} {
		n := Count{Table: c.table}
		for _, t := range c.t {
			n.Acknowledged += t.acked.Load()
			n.Inserted += t.inserted.Load()
		}
		if err := r.pool.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{r.schema, c.table}.Sanitize()).Scan(&n.Stored); err != nil {
			return fmt.Errorf("servebench: counting %s: %w", c.table, err)
		}
		res.Counts = append(res.Counts, n)
	}
	for _, c := range res.Counts {
		if !c.OK() {
			return &CountError{Counts: res.Counts}
		}
	}
	if l := res.Large; l != nil {
		if want := res.Counts[1].Stored; l.Error == "" && l.Rows != want {
			l.Error = fmt.Sprintf("%d rows, want %d", l.Rows, want)
		}
		if l.Error != "" {
			return fmt.Errorf("servebench: the large result (it needs POST /v1/query to stream): %s", l.Error)
		}
	}
	return nil
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

// ingestOf is the measurement of the writes t counted in took, its own
// baseline until vs names another.
func ingestOf(name string, t *tally, took time.Duration, peak int64) Ingest {
	in := Ingest{Name: name, Readings: t.acked.Load(), Batches: t.batches.Load(), Seconds: took.Seconds(),
		Retries: t.retries.Load(), PeakRSS: peak, Ratio: 1, RatioAlone: 1, Baseline: name}
	if took > 0 {
		in.ReadingsPerSec = float64(in.Readings) / took.Seconds()
	}
	return in
}

// vs returns in measured against base.
func (in Ingest) vs(base Ingest) Ingest {
	in.Baseline, in.Ratio = base.Name, in.over(base)
	return in
}

// alone returns in with its ratio to write, the in-process Write alone.
func (in Ingest) alone(write Ingest) Ingest {
	in.RatioAlone = in.over(write)
	return in
}

// over is in's readings/s over base's, 0 where base measured none.
func (in Ingest) over(base Ingest) float64 {
	if base.ReadingsPerSec > 0 {
		return in.ReadingsPerSec / base.ReadingsPerSec
	}
	return 0
}

// lit is t as a DuckDB TIMESTAMPTZ literal.
func lit(t time.Time) string {
	return "TIMESTAMPTZ '" + t.UTC().Format("2006-01-02 15:04:05") + "+00'"
}

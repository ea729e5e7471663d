package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/workload/servebench"
	"github.com/meterstore/meterstore/metering"
)

func newBenchServe() *cobra.Command {
	c := servebench.DefaultConfig()
	var pgURL, jsonPath, day string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "HTTP ingest and query against one meterstore serve, against Write in process",
		Long: `Starts meterstore serve (this binary, a child process) on 127.0.0.1 with a
deployment of its own and a generated token, and measures:
  - one day of quarter-hour load profiles (hotbench's fixture) written by
    --ingest-clients concurrent writers calling store Write in process and by
    as many HTTP clients posting the same batches as CSV, in alternating
    rounds, each into a fresh table: readings/s and their ratio
    (goal: HTTP >= 0.8 of Write);
  - --query-clients clients asking POST /v1/query for every meter's daily
    total of that day (CSV), alone for --query-for, then while the next
    day is written the same way, in process and over HTTP in turns: p50/p99
    latency, and HTTP's readings/s over Write's under the same query load
    (goal: >= 0.7) and over Write's alone (issue 52's ratio as first
    stated, "vs Write alone");
  - with --large-result, one query whose answer, every reading, is much
    larger than query.max_rows: it needs POST /v1/query to stream; then
    the same through the PostgreSQL protocol (pgx) and Flight SQL (rows/s
    against HTTP's), and a point query's p50 latency over HTTP and pgx;
  - with --portal, --portal-clients clients asking random meters' first
    day over the typed resource GET /v1/tables/{table}/series/{malo}/{obis},
    in turns with the same clients asking PostgreSQL alone for the same
    resolved readings (pgx, a prepared statement), then the typed reads
    while the next day is ingested: p50/p99, answers/s and their ratio
    (goals: at least 0.5 of PostgreSQL's answers/s, p99 under ingest at
    most 50 ms); --query-clients 0 leaves the ingest alone with them;
  - serve's peak RSS (VmHWM) per phase and over the run;
  - at the end, that each table holds exactly the readings acknowledged;
    otherwise the bench fails.
Without --pg-url it starts a private PostgreSQL server with default settings.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c.Logger = logger()
			if day != "" {
				d, err := metering.ParseDate(day)
				if err != nil {
					return err
				}
				c.Fixture.Day = d
			}
			bin, err := os.Executable()
			if err != nil {
				return fmt.Errorf("bench serve: the meterstore binary to run serve from: %w", err)
			}
			c.Binary = bin
			url, stop, err := benchServer(ctx, pgURL, "", nil, c.Logger)
			if err != nil {
				return err
			}
			defer stop()
			c.PgURL = url
			res, err := servebench.Run(ctx, c)
			if res != nil && res.Ingest != nil {
				printServe(cmd.OutOrStdout(), res)
				if jerr := printJSON(cmd.OutOrStdout(), jsonPath, res); jerr != nil {
					return errors.Join(err, jerr)
				}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&pgURL, "pg-url", "", "PostgreSQL database to measure on (default: a private server)")
	f.StringVar(&jsonPath, "json", "", "also write the JSON result to this file")
	f.StringVar(&day, "day", "", "first Berlin day of the readings (default: two days ago; it must be within archive.settlement_lag)")
	f.IntVar(&c.Fixture.Meters, "meters", c.Fixture.Meters, "meters, one meter-day each per day")
	f.Float64Var(&c.Fixture.CorrectionRate, "corrections", c.Fixture.CorrectionRate, "share of meter-days delivered again under a higher version")
	f.IntVar(&c.Fixture.MetersPerBatch, "batch", c.Fixture.MetersPerBatch, "meter-days per batch, one HTTP request each (96 readings each on an ordinary day)")
	f.Uint64Var(&c.Fixture.Seed, "seed", c.Fixture.Seed, "seed of the generated values")
	f.IntVar(&c.IngestClients, "ingest-clients", c.IngestClients, "concurrent ingest clients, and in-process writers")
	f.IntVar(&c.QueryClients, "query-clients", c.QueryClients, "concurrent query clients")
	f.IntVar(&c.Rounds, "rounds", c.Rounds, "turns the in-process and HTTP writers take on the first day")
	f.DurationVar(&c.QueryFor, "query-for", c.QueryFor, "how long the query clients run alone")
	f.IntVar(&c.MaxRows, "max-rows", c.MaxRows, "query.max_rows of the deployment")
	f.BoolVar(&c.Portal, "portal", false, "also run the portal workload: random meters' days over the typed series resource, against PostgreSQL alone")
	f.IntVar(&c.PortalClients, "portal-clients", c.PortalClients, "concurrent clients of the portal workload, and PostgreSQL connections")
	f.BoolVar(&c.LargeResult, "large-result", false, "also ask for every reading, a result much larger than --max-rows (needs a streaming POST /v1/query)")
	return cmd
}

func printServe(w io.Writer, r *servebench.Result) {
	fmt.Fprintf(w, "PostgreSQL %s, GOMAXPROCS %d: %d readings a day (%d meters, %.0f%% corrected) in %d batches (HTTP requests); "+
		"%d ingest clients, %d query clients, %d rounds\n\n",
		r.Server, r.GOMAXPROCS, r.Readings, r.Fixture.Meters, r.Fixture.CorrectionRate*100, r.Batches,
		r.IngestClients, r.QueryClients, r.Rounds)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "ingest\tseconds\treadings/s\tratio\tof\tvs Write alone\t503 retried\tserve peak RSS MiB\t\n")
	for _, in := range r.Ingest {
		fmt.Fprintf(tw, "%s\t%.2f\t%.0f\t%.2f\t%s\t%.2f\t%d\t%s\t\n", in.Name, in.Seconds, in.ReadingsPerSec, in.Ratio, in.Baseline, in.RatioAlone, in.Retries, rssMiB(in.PeakRSS))
	}
	tw.Flush()
	if len(r.Queries) > 0 {
		printQueries(w, "queries", r.Queries)
		if len(r.Queries) == 2 && r.Queries[0].P50ms > 0 {
			a, l := r.Queries[0], r.Queries[1]
			fmt.Fprintf(w, "under ingest load / alone: p50 x%.2f, p99 x%.2f\n", l.P50ms/a.P50ms, l.P99ms/a.P99ms)
		}
	}
	if len(r.Portal) > 0 {
		printQueries(w, "portal", r.Portal)
		fmt.Fprintf(w, "portal: typed answers/s over PostgreSQL's %.2f (goal >= 0.5), p99 under ingest %.2f ms (goal <= 50)\n",
			r.PortalQPSvsPostgres, r.PortalP99UnderIngest)
	}
	if l := r.Large; l != nil {
		fmt.Fprintf(w, "\nlarge result (every reading, query.max_rows %d): status %d, %d rows, %.1f MiB in %.2f s, serve peak RSS %s MiB",
			r.MaxRows, l.Status, l.Rows, mib(uint64(l.Bytes)), l.Seconds, rssMiB(l.PeakRSS))
		if l.Error != "" {
			fmt.Fprintf(w, "; %s", l.Error)
		}
		fmt.Fprintln(w)
	}
	if len(r.Wire) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "large result\trows\tseconds\trows/s\tvs HTTP\t\n")
		for _, x := range r.Wire {
			fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.0f\t%.2f\t\n", x.Protocol, x.Rows, x.Seconds, x.RowsPerSec, x.VsHTTP)
		}
		tw.Flush()
	}
	if p := r.Point; p != nil {
		fmt.Fprintf(w, "point query, %d each in turns: p50 HTTP %.2f ms, PostgreSQL %.2f ms (x%.2f)\n", p.Queries, p.HTTPp50, p.PGp50, p.Ratio)
	}
	peaks := "per phase"
	if !r.PhaseRSS {
		peaks = "cumulative: the kernel refused to reset VmHWM"
	}
	fmt.Fprintf(w, "\nserve RSS: %s MiB once serving, peak %s MiB over the run (phase peaks %s)\n", rssMiB(r.IdleRSS), rssMiB(r.PeakRSS), peaks)
	for _, c := range r.Counts {
		verdict := "ok"
		if !c.OK() {
			verdict = "FAILED"
		}
		fmt.Fprintf(w, "count check %s: %d readings acknowledged, %d as inserted, %d stored: %s\n",
			c.Table, c.Acknowledged, c.Inserted, c.Stored, verdict)
	}
	fmt.Fprintf(w, "goals: %q >= 0.80 of %q, %q >= 0.70 of %q (issue 52 first set it against %q: the \"vs Write alone\" column)\n",
		servebench.HTTPAlone, servebench.WriteInProcess, servebench.HTTPLoaded, servebench.WriteLoaded, servebench.WriteInProcess)
}

// rssMiB formats a resident set in MiB, "-" for none measured.
// printQueries prints the query phases qs under the heading kind, and the
// first error of each that had one.
func printQueries(w io.Writer, kind string, qs []servebench.Queries) {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\tclients\tanswers\tanswers/s\trows\tp50 ms\tp99 ms\tmax ms\terrors\tserve peak RSS MiB\t\n", kind)
	for _, q := range qs {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%d\t%.2f\t%.2f\t%.2f\t%d\t%s\t\n",
			q.Name, q.Clients, q.Answers, q.PerSec, q.Rows, q.P50ms, q.P99ms, q.Maxms, q.Errors, rssMiB(q.PeakRSS))
	}
	tw.Flush()
	for _, q := range qs {
		if q.FirstError != "" {
			fmt.Fprintf(w, "%s %s: first error: %s\n", kind, q.Name, q.FirstError)
		}
	}
}

func rssMiB(b int64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", mib(uint64(b)))
}

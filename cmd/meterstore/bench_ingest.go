package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/cmd/meterstore/internal/workload/hotbench"
	"github.com/meterstore/meterstore/metering"
	"github.com/spf13/cobra"
)

func newBenchIngest() *cobra.Command {
	c := hotbench.DefaultConfig()
	var pgURL, jsonPath, day, format string
	var enforced bool
	cmd := &cobra.Command{
		Use:   "ingest",
		Short: "Readings per second and bytes per reading in the hot tier, against raw COPY, for each integrity",
		Long: `Writes one day of quarter-hour load profiles (default 10,000 meters, 3% of
meter-days corrected under a higher version) in batches, five ways on the same
server in one run: raw COPY into a plain table with the hot table's columns,
the same with its primary key, the same with the primary key and the hot
table's CHECK constraints (both for reference), and the hot tier's Write
into a table of each integrity: statement (PostgreSQL enforces every rule
per statement: "database-enforced", in the lean layout of a new such
table), write (Write alone checks the rules between rows) and exclusion
(GiST exclusion constraints). The variants take turns batch by batch.
Ratios are against raw COPY; bytes per reading count heap, indexes, the
ownership relation and the dictionaries. A private server loads
pg_stat_statements, and the run reports the server time of the costliest
statements per reading.

With --format mscons it measures delivery formats instead: each batch encoded
once as a CSV file and once as an MSCONS 2.4c interchange (a message per
meter-day), each decoded and written as 'meterstore ingest' does (CSV in
atomic batches of its default size, MSCONS with consecutive messages sharing
a write of as many readings, each message atomic) into a hot
table of its own, beside raw COPY, and reports MSCONS against CSV; it fails
unless both tables end with the same readings.
Without --pg-url it starts a private PostgreSQL server with default settings.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c.Logger = logger()
			d, err := metering.ParseDate(day)
			if err != nil {
				return err
			}
			c.Fixture.Day = d
			switch format {
			case "":
				if enforced {
					c.Variants = []string{hotbench.RawCopyPK, hotbench.Statement, hotbench.StatementEach}
				}
			case "mscons":
				c.Variants = hotbench.FormatVariants
			default:
				return fmt.Errorf("--format %q: want mscons, or none for the hot write variants", format)
			}
			url, stop, err := benchServer(ctx, pgURL, "", map[string]string{
				"shared_preload_libraries": "pg_stat_statements", "pg_stat_statements.track": "all",
			}, c.Logger)
			if err != nil {
				return err
			}
			defer stop()
			cfg, err := pgxpool.ParseConfig(url)
			if err != nil {
				return err
			}
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				return err
			}
			defer pool.Close()
			res, err := hotbench.Run(ctx, pool, c)
			if err != nil {
				return err
			}
			printIngest(cmd.OutOrStdout(), res)
			return printJSON(cmd.OutOrStdout(), jsonPath, res)
		},
	}
	f := cmd.Flags()
	f.StringVar(&pgURL, "pg-url", "", "PostgreSQL server to measure (default: a private one)")
	f.StringVar(&jsonPath, "json", "", "also write the JSON result to this file")
	f.StringVar(&format, "format", "", "mscons: measure CSV and MSCONS ingest of the same readings instead of the hot write variants")
	f.BoolVar(&enforced, "enforced", false, "measure only the database-enforced hot write (Write and WriteEach) against raw COPY and raw COPY + primary key")
	f.IntVar(&c.Turn, "turn", 1, "consecutive batches each variant writes in its turn (WriteEach overlaps its batches within a turn)")
	f.StringVar(&day, "day", c.Fixture.Day.String(), "Berlin day of the readings (a clock-change day has 92 or 100 quarter hours)")
	f.IntVar(&c.Fixture.Meters, "meters", c.Fixture.Meters, "meters, one meter-day each")
	f.Float64Var(&c.Fixture.CorrectionRate, "corrections", c.Fixture.CorrectionRate, "share of meter-days delivered again under a higher version")
	f.IntVar(&c.Fixture.MetersPerBatch, "batch", c.Fixture.MetersPerBatch, "meter-days per batch (96 readings each on an ordinary day)")
	f.Uint64Var(&c.Fixture.Seed, "seed", c.Fixture.Seed, "seed of the generated values")
	return cmd
}

func printIngest(w io.Writer, r *hotbench.Result) {
	fmt.Fprintf(w, "PostgreSQL %s, GOMAXPROCS %d: %d readings (%d meters, %.0f%% corrected) in %d batches\n\n",
		r.Server, r.GOMAXPROCS, r.Rows, r.Fixture.Meters, r.Fixture.CorrectionRate*100, r.Batches)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "variant\tseconds\treadings/s\tvs raw COPY\trows stored\tbytes/reading\t\n")
	for _, v := range r.Variants {
		fmt.Fprintf(tw, "%s\t%.2f\t%.0f\t%.2f\t%d\t%.0f\t\n", v.Name, v.Seconds, v.ReadingsPerSec, v.Ratio, v.Rows, v.BytesPerReading)
	}
	tw.Flush()
	if len(r.ServerTime) > 0 {
		fmt.Fprintf(w, "\nserver time, costliest statements (pg_stat_statements, nested included):\n")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "µs/reading\tcalls\trows\tstatement\n")
		for _, s := range r.ServerTime {
			fmt.Fprintf(tw, "%.2f\t%d\t%d\t%.100s\n", s.MicrosPerReading, s.Calls, s.Rows, s.Query)
		}
		tw.Flush()
	}
	if r.MSCONSToCSV > 0 {
		fmt.Fprintf(w, "\n%s / %s: %.2f (goal >= 0.80); both stored the same readings\n", hotbench.MSCONSIngest, hotbench.CSVIngest, r.MSCONSToCSV)
		return
	}
	if r.EnforcedToCopyPK > 0 {
		fmt.Fprintf(w, "\n%q / %q: %.2f (goal >= 0.80); goal <= 110 bytes per reading\n", hotbench.Statement, hotbench.RawCopyPK, r.EnforcedToCopyPK)
	}
	if r.EachToCopyPK > 0 {
		fmt.Fprintf(w, "%q / %q: %.2f, %d batches a turn\n", hotbench.StatementEach, hotbench.RawCopyPK, r.EachToCopyPK, max(r.Turn, 1))
	}
}

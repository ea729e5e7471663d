package main

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/workload/agebench"
)

func newBenchAge() *cobra.Command {
	c := agebench.DefaultConfig()
	var pgURL, jsonPath string
	cmd := &cobra.Command{
		Use:   "age",
		Short: "Metadata latency of a table aged by N commits, on both catalog logs",
		Long: `For each log (--logs: postgres, object) and each age N (--ages), creates a
cold table in a fresh file warehouse through MeterStore's catalog and gives
it N daily archivals of --meters market locations (96 quarter hours each, a
snapshot and a manifest per day). It then times, --samples times each,
interleaved: the log's Head of the table's shard, one more archival,
LoadTable, and the cold tier's plan of every reading. It does so again
after each maintenance step: compaction (meterstore compact: small files
and manifests merged), then --keep-snapshots more daily archivals (the
retention window rolls past the compaction, as under the maintenance
loop), expiry of every snapshot but the newest --keep-snapshots and
removal of the files no snapshot references. Last,
the expired tables of every age on a log are timed once more, sample by
sample in turn (phase together), so that their ratio does not also
measure what else the machine did between them. It prints p50s against N
and the ratio of the oldest table to the youngest, per phase. --keep sets the catalog's TableLogKeep
(0: its default; -1: never truncate). The issue's ten years of daily
archival are --ages 30,365,3650. Without --pg-url it starts a private
PostgreSQL server with default settings.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c.Progress, c.Logger = os.Stderr, logger()
			url, stop, err := benchServer(ctx, pgURL, "", nil, c.Logger)
			if err != nil {
				return err
			}
			defer stop()
			res, err := agebench.Run(ctx, url, c)
			if err != nil {
				return err
			}
			printAge(cmd.OutOrStdout(), res)
			return printJSON(cmd.OutOrStdout(), jsonPath, res)
		},
	}
	f := cmd.Flags()
	f.StringVar(&pgURL, "pg-url", "", "PostgreSQL server for the postgres log (default: a private one)")
	f.StringVar(&jsonPath, "json", "", "also write the JSON result to this file")
	f.IntSliceVar(&c.Ages, "ages", c.Ages, "commits each measured table is given")
	f.StringSliceVar(&c.Logs, "logs", c.Logs, "log backends: postgres, object")
	f.IntVar(&c.Samples, "samples", c.Samples, "timings per operation and table")
	f.IntVar(&c.Keep, "keep", c.Keep, "the catalog's TableLogKeep: 0 its default, -1 no truncation")
	f.IntVar(&c.Meters, "meters", c.Meters, "market locations of a day's window")
	f.IntVar(&c.KeepSnapshots, "keep-snapshots", c.KeepSnapshots, "snapshots expiry keeps in the expired phase")
	f.StringVar(&c.Dir, "dir", "", "keep the warehouses here (default: a temporary directory)")
	return cmd
}

func printAge(w io.Writer, r *agebench.Result) {
	fmt.Fprintf(w, "\naging commits: %s; table log keep %d (0: default); p50 of %d samples\n\n",
		r.CommitKind, r.Config.Keep, r.Config.Samples)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "log\tarchivals N\tphase\tphase s\tlog entries\tsnapshots\tmanifests\tfiles\tHead ms\tarchival ms\tLoadTable ms\tplan ms\t")
	for _, p := range r.Points {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.1f\t%d\t%d\t%d\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t\n",
			p.Log, p.Age, p.Phase, p.Seconds, p.Entries, p.Snapshots, p.Manifests, p.Files, p.Head, p.Commit, p.Load, p.Plan)
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, q := range r.Ratios {
		fmt.Fprintf(w, "%s, %s: N=%d / N=%d at p50: Head %.2f, archival %.2f, LoadTable %.2f, plan %.2f   (goal after maintenance: each at most 1.5)\n",
			q.Log, q.Phase, q.To, q.From, q.Head, q.Commit, q.Load, q.Plan)
	}
}

package main

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/agebench"
)

func newBenchAge() *cobra.Command {
	c := agebench.DefaultConfig()
	var pgURL, jsonPath string
	cmd := &cobra.Command{
		Use:   "age",
		Short: "Metadata latency of a table aged by N commits, on both catalog logs",
		Long: `For each log (--logs: postgres, object) and each age N (--ages), creates a
table in a fresh file warehouse through MeterStore's catalog, appends 4 rows
and gives it N commits in all; the aging commits are property updates
(CommitTable with one SetProperties update). It then times, --samples times
each, interleaved: the log's Head of the table's shard, one more commit,
LoadTable, and planning a scan (PlanFiles). It prints p50s against N and the
ratio of the oldest table to the youngest. --keep sets the catalog's
TableLogKeep (0: its default; -1: never truncate, the behaviour before
table logs were truncated). The default ages take a few minutes; the issue's
ten years of daily archival are --ages 30,365,3650 (about ten minutes: each
commit's fork check of the metadata mirror lists every version so far).
With --compact the aging commits are archivals of daily windows (a data
file and a manifest each) through the cold tier, and each table is measured
again after one compaction (meterstore compact).
Without --pg-url it starts a private PostgreSQL server with default settings.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c.Progress, c.Logger = os.Stderr, logger()
			url, stop, err := benchServer(ctx, pgURL, nil, c.Logger)
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
	f.BoolVar(&c.Compact, "compact", false, "age by daily archivals and measure again after compaction")
	f.StringVar(&c.Dir, "dir", "", "keep the warehouses here (default: a temporary directory)")
	return cmd
}

func printAge(w io.Writer, r *agebench.Result) {
	fmt.Fprintf(w, "\naging commits: %s; table log keep %d (0: default); p50 of %d samples\n\n",
		r.CommitKind, r.Config.Keep, r.Config.Samples)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "log\tcommits N\tlog entries\taging s\tHead ms\tcommit ms\tLoadTable ms\tPlanFiles ms\t")
	for _, p := range r.Points {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%.2f\t%.2f\t%.2f\t%.2f\t\n",
			p.Log, p.Age, p.Entries, p.AgingSeconds, p.Head, p.Commit, p.Load, p.Plan)
	}
	tw.Flush()
	if r.Config.Compact {
		fmt.Fprintln(w, "\nafter compaction:")
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "log\tcommits N\tfiles\tmanifests\tcompact s\tHead ms\tcommit ms\tLoadTable ms\tPlanFiles ms\t")
		for _, p := range r.Points {
			if c := p.Compaction; c != nil {
				fmt.Fprintf(tw, "%s\t%d\t%d -> %d\t%d -> %d\t%.1f\t%.2f\t%.2f\t%.2f\t%.2f\t\n",
					p.Log, p.Age, c.FilesBefore, c.FilesAfter, c.ManifestsBefore, c.ManifestsAfter, p.CompactSeconds,
					p.HeadAfter, p.CommitAfter, p.LoadAfter, p.PlanAfter)
			}
		}
		tw.Flush()
	}
	fmt.Fprintln(w)
	for _, q := range r.Ratios {
		fmt.Fprintf(w, "%s: N=%d / N=%d at p50: Head %.2f, commit %.2f, LoadTable %.2f, PlanFiles %.2f   (goal: each at most 1.5)\n",
			q.Log, q.To, q.From, q.Head, q.Commit, q.Load, q.Plan)
		if r.Config.Compact {
			fmt.Fprintf(w, "%s: after compaction: Head %.2f, commit %.2f, LoadTable %.2f, PlanFiles %.2f\n",
				q.Log, q.HeadAfter, q.CommitAfter, q.LoadAfter, q.PlanAfter)
		}
	}
}

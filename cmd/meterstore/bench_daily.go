package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/workload/querybench"
)

func newBenchDaily() *cobra.Command {
	c := querybench.DefaultDailyConfig()
	cmd := &cobra.Command{
		Use:   "daily",
		Short: "Per-day and per-month questions through the relation daily against the same from readings",
		Long: `Loads --meters meters' quarter hours for --days days (the archival
benchmark's fixture, 3% of the meter-days corrected under a higher version)
through the hot tier, archives all but the last --hot-days (each cycle also
writes the daily rollup), and asks, --runs times each after a warm-up,
interleaved:
  (1) per day of the fixture, the meters with missing intervals and the
      intervals present,
  (2) every meter's total per month over the first three months,
each through daily and computed from readings. It checks that both give the
same rows, and prints the p50s, the speedups (readings over daily) and
daily_speedup, the smaller one; the rollup's bytes per series-day; and the
load and archival times (the archival's includes the rollup's).
Without --pg-url it starts a private PostgreSQL server with default settings.
With --dir the server and the fixture stay there: a later run of the same
size asks its questions of them without loading again.`,
	}
	fixtureBench(cmd, &c, func(ctx context.Context, w io.Writer, url string, c querybench.Config) (any, error) {
		res, err := querybench.RunDaily(ctx, url, c)
		if err != nil {
			return nil, err
		}
		printDaily(w, res)
		return res, nil
	})
	cmd.Flags().IntVar(&c.Runs, "runs", c.Runs, "runs per question after one warm-up")
	cmd.Flags().IntVar(&c.Threads, "threads", c.Threads, "DuckDB threads")
	cmd.Flags().StringVar(&c.MemoryLimit, "memory-limit", c.MemoryLimit, "DuckDB memory_limit")
	return cmd
}

func printDaily(w io.Writer, r *querybench.DailyResult) {
	fmt.Fprintf(w, "\n%d readings: %d cold, %d hot, W %s; loaded in %.0f s, archived in %.1f s (rollup: %d rows in %d snapshots)\n",
		r.Readings, r.ColdRows, r.HotRows, stamp(r.Watermark), r.LoadSecs, r.ArchiveSecs, r.RollupRows, r.RollupSnapshots)
	fmt.Fprintf(w, "rollup: %d files, %d bytes, %d settled series-days, %.2f B a series-day\n\n",
		r.RollupFiles, r.RollupBytes, r.SeriesDays, r.BytesPerSeriesDay)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "question\trows\tdaily p50 ms\treadings p50 ms\tspeedup\tsame answers")
	for _, q := range []querybench.DailyCase{r.Completeness, r.Monthly} {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.2f\t%v\n", q.Name, q.Rows, q.DailyP50, q.ReadingsP50, q.Speedup, q.Equal)
	}
	tw.Flush()
	for _, q := range []querybench.DailyCase{r.Completeness, r.Monthly} {
		fmt.Fprintf(w, "%s, daily's last run: read %.1f ms, run %.1f ms (hot scan %.1f ms, %d hot rows); steps ms:", q.Name, q.DailyReadMs, q.DailyRunMs, q.DailyHotScanMs, q.DailyHotRows)
		for _, k := range slices.Sorted(maps.Keys(q.DailySteps)) {
			fmt.Fprintf(w, " %s %.1f", k, q.DailySteps[k])
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\ndaily_speedup: %.2f   (goal: at least 20: %s)\n", r.DailySpeedup, yes(r.DailySpeedup >= 20))
}

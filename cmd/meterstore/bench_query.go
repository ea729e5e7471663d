package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/workload/querybench"
)

func newBenchQuery() *cobra.Command {
	c := querybench.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "query",
		Short: "Cross-tier query latency, against DuckDB on the same Parquet files",
		Long: `Loads --meters meters' quarter hours for --days days (the archival
benchmark's fixture, 3% corrections), archives all but the last --hot-days,
and runs, --runs times each after a warm-up, interleaved:
  (a) one meter's resolved daily totals for a year spanning both tiers,
  (b) every meter's resolved total for the first (cold) month,
  (c) the floor: (b) run by DuckDB directly on that month's Parquet files,
      with the same version resolution, without MeterStore,
  (d) (c) without resolving versions,
  (e) every meter's resolved total over the hot days,
  (f) (e) computed by PostgreSQL alone over the same rows (its SQL printed),
  (g) one meter's resolved hot day through SQL,
  (h) the same through the typed read (Store.SeriesReadings, no DuckDB),
  (i) the same rows by PostgreSQL alone, a prepared statement (pgx),
  (j) one meter's year across both tiers through the typed read, warm;
      (g) to (j) --point-runs times with one client, then with two.
It checks that (b) and (c) agree, and (e) and (f), and prints p50/p99,
(b)/(c), (b)/(d), (e)/(f), (g)/(i), (h)/(i) and (h)/(i) in answers/s.
Without --pg-url it starts a private PostgreSQL server with default settings.`,
	}
	fixtureBench(cmd, &c, func(ctx context.Context, w io.Writer, url string, c querybench.Config) (any, error) {
		res, err := querybench.Run(ctx, url, c)
		if err != nil {
			return nil, err
		}
		printQuery(w, res)
		return res, nil
	})
	f := cmd.Flags()
	f.IntVar(&c.Runs, "runs", c.Runs, "runs per query after one warm-up")
	f.IntVar(&c.PointRuns, "point-runs", c.PointRuns, "runs of each point question (g) to (j), with one client and with two")
	f.IntVar(&c.Threads, "threads", c.Threads, "DuckDB threads, for MeterStore and the floor")
	f.StringVar(&c.MemoryLimit, "memory-limit", c.MemoryLimit, "DuckDB memory_limit, for MeterStore and the floor")
	return cmd
}

func printQuery(w io.Writer, r *querybench.Result) {
	fmt.Fprintf(w, "\n%d readings: %d cold, %d hot, W %s; %d runs each after a warm-up, DuckDB threads %d\n\n",
		r.Readings, r.ColdRows, r.HotRows, stamp(r.Watermark), r.Config.Runs, r.Config.Threads)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "query\trows\ttiers\tp50 ms\tp99 ms")
	for _, q := range []querybench.Case{r.MeterYear, r.ColdMonth, r.Floor, r.Plain, r.HotDays, r.Postgres} {
		tiers := strings.Join(q.Tiers, "+")
		if tiers == "" {
			tiers = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.1f\t%.1f\n", q.Name, q.Rows, tiers, q.P50, q.P99)
	}
	tw.Flush()
	fmt.Fprintf(w, "\n(b)/(c) at p50: %.2f\n(b)/(d) at p50: %.2f   (goal: at most 1.5)\n(e)/(f) at p50: %.2f   (goal: at most 1.0)\n",
		r.Ratio, r.PlainRatio, r.HotRatio)
	fmt.Fprintf(w, "(f): %s\n", r.Postgres.SQL)
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "point question\trows\tp50 ms\tp99 ms\tanswers/s\tp50 ms, 2 clients\tp99 ms, 2 clients\tanswers/s, 2 clients")
	for _, q := range []querybench.PointCase{r.PointSQL, r.PointTyped, r.PointPostgres, r.PointYear} {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%.0f\t%.2f\t%.2f\t%.0f\n", q.Name, q.Rows, q.P50, q.P99, q.QPS, q.P50x2, q.P99x2, q.QPSx2)
	}
	tw.Flush()
	fmt.Fprintf(w, "\n(g)/(i) at p50: %.2f   (goal: at most 3)\n(h)/(i) at p50: %.2f   (goal: at most 1.5)\n(h)/(i) answers/s, 2 clients: %.2f   (goal: at least 0.7)\n(j) p50: %.1f ms   (goal: at most 25)\n",
		r.PointSQLRatio, r.PointTypedRatio, r.PointQPSRatio, r.PointYear.P50)
	t := r.Timing
	for _, q := range []string{"a", "b", "e"} {
		fmt.Fprintf(w, "(%s) at p50, ms: DuckDB start %.1f, hot snapshot %.1f, cold planning %.1f, views %.1f, computing %.1f (hot rows crossing %.1f), rest %.1f\n",
			q, t[q+".open"], t[q+".hot_open"], t[q+".cold_plan"], t[q+".views"], t[q+".run"], t[q+".hot_scan"], t[q+".rest"])
	}
	var steps []string
	for _, name := range []string{"instance", "analysis", "relations", "watermark", "hot_snapshot", "cold_plan", "floor",
		"views", "lockdown", "describe", "create", "finish", "first_page", "typed"} {
		if ms, ok := t["g.mean."+name]; ok {
			steps = append(steps, fmt.Sprintf("%s %.2f", name, ms))
		}
	}
	if len(steps) > 0 {
		fmt.Fprintf(w, "(g) mean ms a statement by step: %s\n", strings.Join(steps, ", "))
	}
	for _, q := range []string{"a", "b", "e"} {
		var steps []string
		for _, name := range []string{"instance", "analysis", "relations", "watermark", "hot_snapshot", "cold_plan", "floor",
			"views", "lockdown", "describe", "create", "finish", "first_page"} {
			if ms, ok := t[q+".step."+name]; ok {
				steps = append(steps, fmt.Sprintf("%s %.2f", name, ms))
			}
		}
		if len(steps) > 0 {
			fmt.Fprintf(w, "(%s) p50 ms by step: %s\n", q, strings.Join(steps, ", "))
		}
	}
	if s := t["e.hot_scan"]; s > 0 {
		fmt.Fprintf(w, "(e) moved %d hot rows from PostgreSQL, %.0f rows/s at p50\n", r.HotMoved, float64(r.HotMoved)/s*1000)
	}
}

package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/cmd/meterstore/internal/workload/consensusbench"
	"github.com/spf13/cobra"
)

func newBench() *cobra.Command {
	bench := &cobra.Command{Use: "bench", Short: "Measure MeterStore's components"}
	bench.AddCommand(newBenchConsensus())
	bench.AddCommand(newBenchIngest())
	bench.AddCommand(newBenchArchive())
	bench.AddCommand(newBenchQuery())
	bench.AddCommand(newBenchDaily())
	bench.AddCommand(newBenchServe())
	bench.AddCommand(newBenchAge())
	return bench
}

func newBenchConsensus() *cobra.Command {
	c := consensusbench.DefaultConfig()
	var pgURL, jsonPath string
	cmd := &cobra.Command{
		Use:   "consensus",
		Short: "CaS throughput and latency of the PostgreSQL log, READ COMMITTED vs SERIALIZABLE",
		Long: `Runs both isolation levels against the same server: a closed loop of
sequential CaS workers for the peak, then an open loop at fixed offered rates
(fractions of that peak) past saturation and back down. During the trigger
steps one SERIALIZABLE transaction stays open, the seed's slow reader.
Without --pg-url it starts a private PostgreSQL server with default settings.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c.Logger = logger()
			url, stop, err := benchServer(ctx, pgURL, "", map[string]string{"max_connections": "300"}, c.Logger)
			if err != nil {
				return err
			}
			defer stop()
			cfg, err := pgxpool.ParseConfig(url)
			if err != nil {
				return err
			}
			res, err := consensusbench.Run(ctx, cfg, c)
			if err != nil {
				return err
			}
			printBench(cmd.OutOrStdout(), res)
			return printJSON(cmd.OutOrStdout(), jsonPath, res)
		},
	}
	f := cmd.Flags()
	f.StringVar(&pgURL, "pg-url", "", "PostgreSQL server to measure (default: a private one)")
	f.StringVar(&jsonPath, "json", "", "also write the JSON result to this file")
	f.IntVar(&c.Shards, "shards", c.Shards, "shards written")
	f.IntVar(&c.Payload, "payload", c.Payload, "bytes per entry")
	f.Int64Var(&c.TruncateEvery, "truncate-every", c.TruncateEvery, "truncate a shard every N commits")
	f.IntVar(&c.Workers, "workers", c.Workers, "closed-loop workers")
	f.IntVar(&c.MaxInFlight, "in-flight", c.MaxInFlight, "open-loop concurrency cap")
	f.DurationVar(&c.ClosedFor, "closed", c.ClosedFor, "closed-loop duration per mode")
	f.DurationVar(&c.StepFor, "step", c.StepFor, "open-loop duration per step")
	f.Float64SliceVar(&c.Steps, "steps", c.Steps, "open-loop offered loads as fractions of the closed-loop peak")
	f.IntSliceVar(&c.TriggerSteps, "trigger-steps", c.TriggerSteps, "steps (0-based) with an open SERIALIZABLE transaction")
	return cmd
}

func printBench(w io.Writer, r *consensusbench.Result) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "mode\tclosed CaS/s\tp50 ms\tp99 ms\terrors\t\n")
	for _, m := range r.Modes {
		fmt.Fprintf(tw, "%s\t%.0f\t%.2f\t%.2f\t%d\t\n", m.Isolation, m.ClosedPS, m.ClosedP50, m.ClosedP99, m.ClosedErrs)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "mode\tload\ttrigger\toffered/s\tachieved/s\tcommitted/s\tp50 ms\tp99 ms\tmax ms\tmismatch\tretryable\terrors\tunserved\tSIRead max\tSIRead mean\t\n")
	for _, m := range r.Modes {
		for _, s := range m.Steps {
			fmt.Fprintf(tw, "%s\t%.0f%%\t%v\t%.0f\t%.0f\t%.0f\t%.2f\t%.2f\t%.1f\t%d\t%d\t%d\t%d\t%d\t%.0f\t\n",
				m.Isolation, s.Load*100, s.Trigger, s.OfferedPS, s.AchievedPS, s.CommittedPS,
				s.P50ms, s.P99ms, s.Maxms, s.Mismatches, s.Retryable, s.Errors, s.Backlog, s.SIReadMax, s.SIReadMean)
		}
	}
	tw.Flush()
	for _, m := range r.Modes {
		for i, s := range m.Steps {
			if s.FirstError != "" {
				fmt.Fprintf(w, "%s step %d: first error: %s\n", m.Isolation, i, s.FirstError)
			}
		}
	}
	// The seed's metastability question: does latency come back once the
	// load falls to where it was before the overload?
	for _, m := range r.Modes {
		last := m.Steps[len(m.Steps)-1]
		for _, s := range m.Steps[:len(m.Steps)-1] {
			if s.Load == last.Load && s.P50ms > 0 && s.P99ms > 0 {
				fmt.Fprintf(w, "%s: final %.0f%% step vs the same load before overload: p50 x%.2f, p99 x%.2f, committed/s x%.2f\n",
					m.Isolation, last.Load*100, last.P50ms/s.P50ms, last.P99ms/s.P99ms, last.CommittedPS/s.CommittedPS)
				break
			}
		}
	}
	if len(r.Modes) == 2 && len(r.Modes[0].Steps) == len(r.Modes[1].Steps) && r.Modes[0].ClosedPS > 0 {
		rc, ser := r.Modes[0], r.Modes[1]
		fmt.Fprintf(w, "\nSERIALIZABLE / READ COMMITTED: closed loop %.2f", ser.ClosedPS/rc.ClosedPS)
		for i := range rc.Steps {
			if rc.Steps[i].CommittedPS > 0 {
				fmt.Fprintf(w, "; step %d committed %.2f", i, ser.Steps[i].CommittedPS/rc.Steps[i].CommittedPS)
			}
		}
		fmt.Fprintln(w)
	}
}

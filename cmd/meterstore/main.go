// Command meterstore is the MeterStore command line.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/meterstore/meterstore/internal/parquetzstd"
)

func main() {
	// Before any Parquet file is written or read: arrow-go's own zstd
	// codec allocates an 8 MiB history per page compressed after a
	// garbage collection (see parquetzstd).
	if err := parquetzstd.Register(); err != nil {
		fmt.Fprintln(os.Stderr, "meterstore:", shownError(err))
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	catchSIGPIPE() // brokenpipe.go
	out := &pipeOut{f: os.Stdout}
	root := newRoot()
	root.SetOut(out)
	err := root.ExecuteContext(ctx)
	if out.stoppedByPipe(err) {
		stop()
		os.Exit(exitBrokenPipe)
	}
	if err != nil && err != errUnhealthy {
		// An error may quote what came from outside: a file name, a
		// value, an object's key (printable.go).
		fmt.Fprintln(os.Stderr, "meterstore:", shownError(err))
	}
	stop()
	os.Exit(exitCode(err))
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "meterstore",
		Short:         "Tiered storage for metering time series: PostgreSQL and Apache Iceberg",
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("meterstore {{.Version}}\n")
	root.AddCommand(newBench(), newDemo(), newInit(), newCheck(), newCreate(), newIngest(),
		newArchive(), newMaintain(), newQuery(), newStatus(), newVerify(), newSnapshots(), newPurge(),
		newServe(), newToken(), newCompleteness(), newErase(), newOrphans(), newExpire(), newReassert(), newCompact(), newExplain())
	root.AddCommand(newCompletion(root))
	addCompletions(root)
	return root
}

func logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

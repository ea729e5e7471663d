package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/meterstore/meterstore/internal/pgcluster"
)

// benchServer returns the connection string of the PostgreSQL server a benchmark
// works on: pgURL if given, otherwise a private cluster started from the
// installed binaries with settings, which stop shuts down, in dir if set
// (kept, and reused by the next start there), else in a temporary one.
func benchServer(ctx context.Context, pgURL, dir string, settings map[string]string, log *slog.Logger) (url string, stop func(), err error) {
	if pgURL != "" {
		return pgURL, func() {}, nil
	}
	cl, err := pgcluster.Start(ctx, pgcluster.Options{Dir: dir, Logger: log, Settings: settings})
	if err != nil {
		return "", nil, err
	}
	return cl.URL("postgres"), func() { cl.Stop(context.Background()) }, nil
}

// printJSON writes v as indented JSON to w and, if path is set, to that file.
func printJSON(w io.Writer, path string, v any) error {
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if path != "" {
		if err := os.WriteFile(path, out, 0o644); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintf(w, "\n%s\n", out)
	return err
}

package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestIsRetryableFileErrors: a missing file, a directory read as a file
// and a missing configuration are permanent, although the errno they wrap
// has the Timeout and Temporary methods of a net.Error; a network failure
// and a deadline stay retryable.
func TestIsRetryableFileErrors(t *testing.T) {
	dir := t.TempDir()
	_, missing := os.Open(filepath.Join(dir, "missing.csv"))
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, isDir := f.Read(make([]byte, 1))
	f.Close()
	_, readDir := os.ReadFile(dir)
	for name, err := range map[string]error{
		"missing file":      missing,
		"directory read":    isDir,
		"directory as file": readDir,
		"wrapped":           fmt.Errorf("ingest: %w", missing),
		"bare errno":        syscall.ENOENT,
	} {
		if err == nil {
			t.Fatalf("%s: no error", name)
		}
		if IsRetryable(err) {
			t.Errorf("%s (%v) is retryable; want permanent", name, err)
		}
	}
	for name, err := range map[string]error{
		"connection refused": fmt.Errorf("store: connect: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}),
		"deadline":           fmt.Errorf("x: %w", context.DeadlineExceeded),
		"timeout errno":      &os.PathError{Op: "read", Path: "/x", Err: syscall.ETIMEDOUT},
		"in flight":          fmt.Errorf("query: %w", ErrInFlight),
	} {
		if !IsRetryable(err) {
			t.Errorf("%s (%v) is not retryable", name, err)
		}
	}
	if !errors.Is(fmt.Errorf("%w", ErrInFlight), ErrInFlight) {
		t.Fatal("ErrInFlight does not wrap")
	}
}

// TestIsRetryableServerShutdown: a server error that no tier classified
// is retryable when its SQLSTATE says the server is going away or busy,
// as the catalog's log reports PostgreSQL shutting down under a write
// (meterstore serve answered such an ingest 500 instead of 503); any
// other SQLSTATE stays permanent.
func TestIsRetryableServerShutdown(t *testing.T) {
	wrap := func(code string) error {
		return fmt.Errorf("archive: write power: cold: load power: catalog: meterstore.power: %w",
			fmt.Errorf("consensus/postgres: head %q: %w", "table/meterstore.power",
				&pgconn.PgError{Severity: "FATAL", Code: code, Message: "terminating connection due to administrator command"}))
	}
	for _, code := range []string{"57P01", "57P03", "08006", "53300", "40001"} {
		if !IsRetryable(wrap(code)) {
			t.Errorf("SQLSTATE %s is not retryable", code)
		}
	}
	for _, code := range []string{"42601", "23505", "XX000"} {
		if IsRetryable(wrap(code)) {
			t.Errorf("SQLSTATE %s is retryable", code)
		}
	}
}

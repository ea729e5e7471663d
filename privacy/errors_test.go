package privacy

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/series"
)

func TestErrorMessage(t *testing.T) {
	err := classify("sweep", errors.New("boom"))
	if got := err.Error(); got != "privacy: sweep: internal error: boom" {
		t.Errorf("Error() = %q", got)
	}
	err = classify("sweep", io.ErrUnexpectedEOF)
	if got := err.Error(); got != "privacy: sweep: unavailable: unexpected EOF" || !series.IsRetryable(err) {
		t.Errorf("Error() = %q, retryable %v", got, series.IsRetryable(err))
	}
}

// An unreachable server is series.Unavailable, hence retryable.
func TestUnreachable(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://nobody@127.0.0.1:1/none?connect_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	_, err = Open(ctx, pool, Options{})
	if !series.IsRetryable(err) {
		t.Errorf("Open on an unreachable server: %v, want a retryable error", err)
	}
}

package privacy

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

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

// A registry opens on an unreachable server, since what needs no registry
// must go on; each of its operations fails then as series.Unavailable,
// hence retryable.
func TestUnreachable(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://nobody@127.0.0.1:1/none?connect_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	r, err := Open(ctx, pool, Options{SubjectKey: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		t.Fatalf("Open on an unreachable server: %v; want the registry, its operations failing", err)
	}
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	_, rerr := r.Register(ctx, "DE0001", now)
	_, _, _, lerr := r.Resolve(ctx, "ref")
	_, eerr := r.Erase(ctx, "DE0001", "Art. 17 DSGVO", "test")
	_, serr := r.Sweep(ctx, now, CalendarYears(3), "§ 60 Abs. 6 MsbG", "test")
	for op, err := range map[string]error{"register": rerr, "resolve": lerr, "erase": eerr, "sweep": serr} {
		if !series.IsRetryable(err) {
			t.Errorf("%s on an unreachable server: %v, want a retryable error", op, err)
		}
	}
}

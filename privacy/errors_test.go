package privacy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

func TestKinds(t *testing.T) {
	for _, c := range []struct {
		err  error
		kind Kind
	}{
		{&pgconn.PgError{Code: "55P03"}, Unavailable}, // lock_not_available
		{&pgconn.PgError{Code: "40001"}, Unavailable}, // serialization_failure
		{&pgconn.PgError{Code: "40P01"}, Unavailable}, // deadlock_detected
		{&pgconn.PgError{Code: "57P01"}, Unavailable}, // admin_shutdown
		{&pgconn.PgError{Code: "08006"}, Unavailable}, // connection_failure
		{&pgconn.PgError{Code: "53300"}, Unavailable}, // too_many_connections
		{&pgconn.PgError{Code: "22021"}, InvalidInput},
		{&pgconn.PgError{Code: "42501"}, InvalidConfig},
		{&pgconn.PgError{Code: "3F000"}, InvalidConfig},
		{&pgconn.PgError{Code: "23505"}, Internal},
		{&pgconn.PgError{Code: "42601"}, Internal}, // syntax_error: retrying repeats it
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), Unavailable},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, Unavailable},
		{context.DeadlineExceeded, Unavailable},
		{errors.New("something else"), Internal},
	} {
		err := classify("sweep", fmt.Errorf("delete due references: %w", c.err))
		var e *Error
		if !errors.As(err, &e) || e.Kind != c.kind || !errors.Is(err, c.err) {
			t.Errorf("classify(%v) = %v, want kind %v", c.err, err, c.kind)
			continue
		}
		if e.IsRetryable() != (c.kind == Unavailable) || IsRetryable(err) != e.IsRetryable() {
			t.Errorf("%v: IsRetryable %v", c.err, e.IsRetryable())
		}
	}
	if IsRetryable(errors.New("plain")) || IsRetryable(nil) {
		t.Error("a plain error is retryable")
	}
	inner := &Error{Kind: InvalidInput, Op: "register"}
	if got := classify("x", inner); got != error(inner) {
		t.Errorf("an *Error is not passed through: %v", got)
	}
	for k := InvalidInput; k <= Internal; k++ {
		if strings.HasPrefix(k.String(), "Kind(") {
			t.Errorf("kind %d has no name", k)
		}
	}
	if got := (&Error{Kind: Unavailable, Op: "sweep", Err: io.EOF}).Error(); got != "privacy: sweep: unavailable: EOF" {
		t.Errorf("Error() = %q", got)
	}
}

// An unreachable server is Unavailable, hence retryable.
func TestUnreachable(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://nobody@127.0.0.1:1/none?connect_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	_, err = Open(ctx, pool, Options{})
	if !IsRetryable(err) {
		t.Errorf("Open on an unreachable server: %v, want a retryable error", err)
	}
}

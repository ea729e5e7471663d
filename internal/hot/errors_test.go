package hot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/series"
)

func TestKinds(t *testing.T) {
	for _, c := range []struct {
		err  error
		kind series.Kind
	}{
		{&pgconn.PgError{Code: "55P03"}, series.Unavailable}, // lock_not_available
		{&pgconn.PgError{Code: "40001"}, series.Unavailable}, // serialization_failure
		{&pgconn.PgError{Code: "57P01"}, series.Unavailable}, // admin_shutdown
		{&pgconn.PgError{Code: "08006"}, series.Unavailable}, // connection_failure
		{&pgconn.PgError{Code: "53100"}, series.Unavailable}, // disk_full
		{&pgconn.PgError{Code: "23505"}, series.IntegrityViolation},
		{&pgconn.PgError{Code: "23P01"}, series.IntegrityViolation},
		{&pgconn.PgError{Code: "22003"}, series.InvalidInput},
		{&pgconn.PgError{Code: "42P01"}, series.InvalidConfig},
		{&pgconn.PgError{Code: "42501"}, series.InvalidConfig},
		{&pgconn.PgError{Code: "42601"}, series.Internal}, // syntax_error: retrying repeats it
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), series.Unavailable},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, series.Unavailable},
		{context.DeadlineExceeded, series.Unavailable},
		{errors.New("something else"), series.Internal},
	} {
		err := classify("write", "t", c.err)
		var e *series.Error
		if !errors.As(err, &e) || e.Kind != c.kind || !errors.Is(err, c.err) {
			t.Errorf("classify(%v) = %v, want kind %v", c.err, err, c.kind)
			continue
		}
		if e.IsRetryable() != (c.kind == series.Unavailable) || series.IsRetryable(err) != e.IsRetryable() {
			t.Errorf("%v: IsRetryable %v", c.err, e.IsRetryable())
		}
	}
	if series.IsRetryable(errors.New("plain")) || series.IsRetryable(nil) {
		t.Error("a plain error is retryable")
	}
	inner := &series.Error{Kind: series.IntegrityViolation, Op: "write"}
	if got := classify("x", "y", inner); got != error(inner) {
		t.Errorf("an *Error is not passed through: %v", got)
	}
	for k := series.IntegrityViolation; k <= series.Internal; k++ {
		if strings.HasPrefix(k.String(), "Kind(") {
			t.Errorf("kind %d has no name", k)
		}
	}
}

// TestLostConnection kills the server process of a writer's connection:
// the write fails as retryable, and retrying it succeeds.
func TestLostConnection(t *testing.T) {
	h, pool := newTier(t, Options{})
	tab := lastgang("lastgang")
	declare(t, h, tab)
	ctx := context.Background()
	cfg := pool.Config().Copy()
	cfg.MaxConns = 1
	one, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	w, err := New(one, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rows := meterDay(1, 1)
	if _, err := w.Write(ctx, tab, rows[:10]); err != nil {
		t.Fatal(err)
	}
	var pid int
	if err := one.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `SELECT pg_terminate_backend($1, 10000)`, pid); err != nil {
		t.Fatal(err)
	}
	_, err = w.Write(ctx, tab, rows)
	if !series.IsRetryable(err) {
		t.Fatalf("write on a killed connection: %v, want a retryable error", err)
	}
	t.Logf("write on a killed connection: %v", err)
	res, err := w.Write(ctx, tab, rows)
	if err != nil || res.Inserted != 86 || res.Present != 10 {
		t.Fatalf("retry: %+v, %v", res, err)
	}
}

// TestUnreachable: a server that cannot be reached is retryable.
func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg, err := pgxpool.ParseConfig("postgres://postgres@" + addr + "/x?connect_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	h, err := New(pool, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tab := lastgang("lastgang")
	if err := h.Ensure(ctx, tab); !series.IsRetryable(err) {
		t.Fatalf("Ensure: %v", err)
	}
	if _, err := h.Write(ctx, tab, meterDay(1, 1)); !series.IsRetryable(err) {
		t.Fatalf("Write: %v", err)
	}
}

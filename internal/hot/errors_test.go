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
)

func TestKinds(t *testing.T) {
	for _, c := range []struct {
		err  error
		kind Kind
	}{
		{&pgconn.PgError{Code: "55P03"}, Unavailable}, // lock_not_available
		{&pgconn.PgError{Code: "40001"}, Unavailable}, // serialization_failure
		{&pgconn.PgError{Code: "57P01"}, Unavailable}, // admin_shutdown
		{&pgconn.PgError{Code: "08006"}, Unavailable}, // connection_failure
		{&pgconn.PgError{Code: "53100"}, Unavailable}, // disk_full
		{&pgconn.PgError{Code: "23505"}, IntegrityViolation},
		{&pgconn.PgError{Code: "23P01"}, IntegrityViolation},
		{&pgconn.PgError{Code: "22003"}, InvalidInput},
		{&pgconn.PgError{Code: "42P01"}, InvalidConfig},
		{&pgconn.PgError{Code: "42501"}, InvalidConfig},
		{&pgconn.PgError{Code: "42601"}, Internal}, // syntax_error: retrying repeats it
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), Unavailable},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, Unavailable},
		{context.DeadlineExceeded, Unavailable},
		{errors.New("something else"), Internal},
	} {
		err := classify("write", "t", c.err)
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
	inner := &Error{Kind: IntegrityViolation, Op: "write"}
	if got := classify("x", "y", inner); got != error(inner) {
		t.Errorf("an *Error is not passed through: %v", got)
	}
	for k := IntegrityViolation; k <= Internal; k++ {
		if strings.HasPrefix(k.String(), "Kind(") {
			t.Errorf("kind %d has no name", k)
		}
	}
}

func TestErrorMessage(t *testing.T) {
	var p problems
	for i := range 8 {
		p.add(20-i, "bad %d", 20-i)
	}
	p.add(20, "reported twice")
	e := p.error(InvalidInput, "write", "lastgang")
	want := "hot: write lastgang: invalid input: 8 row(s); row 13: bad 13; row 14: bad 14; row 15: bad 15; row 16: bad 16; row 17: bad 17; and 3 more"
	if e.Error() != want || len(e.Rows) != 8 || e.Rows[0] != 13 {
		t.Fatalf("%q\nrows %v", e.Error(), e.Rows)
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
	if !IsRetryable(err) {
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
	if err := h.Ensure(ctx, tab); !IsRetryable(err) {
		t.Fatalf("Ensure: %v", err)
	}
	if _, err := h.Write(ctx, tab, meterDay(1, 1)); !IsRetryable(err) {
		t.Fatalf("Write: %v", err)
	}
}

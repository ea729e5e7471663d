package hot

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/series"
)

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

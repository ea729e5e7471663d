package idempotency

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/store"
)

// A cutter forwards connections on loopback to a PostgreSQL server until
// it is told to cut: then it closes each connection (an end of stream,
// not a reset) on the next statement the client sends, unforwarded, as a
// proxy in front of the server does when it loses its upstream.
type cutter struct {
	ln       net.Listener
	upstream string
	cut      atomic.Bool
	wg       sync.WaitGroup
}

func newCutter(t *testing.T, upstream string) *cutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{ln: ln, upstream: upstream}
	c.wg.Go(func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.DialTimeout("tcp", upstream, 10*time.Second)
			if err != nil {
				client.Close()
				continue
			}
			c.wg.Go(func() {
				io.Copy(client, server)
				client.Close()
			})
			c.wg.Go(func() {
				defer server.Close()
				defer client.Close()
				buf := make([]byte, 32<<10)
				for {
					n, err := client.Read(buf)
					if err != nil || c.cut.Load() {
						return
					}
					if _, err := server.Write(buf[:n]); err != nil {
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		c.cut.Store(true)
	})
	return c
}

// TestClaimConnectionLost: a claim whose connection to PostgreSQL ends
// mid-statement fails as worth retrying (an ingest answers 503 with
// Retry-After), not as an internal error (500).
func TestClaimConnectionLost(t *testing.T) {
	u, err := url.Parse(pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	c := newCutter(t, u.Host)
	u.Host = c.ln.Addr().String()
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	r := New(store.ServiceDB{Pool: pool, Schema: "meterstore"})
	ctx := t.Context()
	t0 := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	if _, _, err := r.Claim(ctx, Key{Token: "loader", Key: "a", Table: "power"}, t0, time.Minute, time.Hour); err != nil {
		t.Fatal(err)
	}
	c.cut.Store(true)
	_, _, err = r.Claim(ctx, Key{Token: "loader", Key: "b", Table: "power"}, t0, time.Minute, time.Hour)
	if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		t.Fatalf("a claim whose connection ends mid-statement: %v; want an end of stream", err)
	}
	if !store.IsRetryable(err) {
		t.Errorf("a claim whose connection ended mid-statement is not worth retrying: %v", err)
	}
}

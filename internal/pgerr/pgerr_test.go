package pgerr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/meterstore/meterstore/series"
)

func TestTransient(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "55P03"}, true},
		{fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: "40001"}), true},
		{&pgconn.PgError{Code: "08006"}, true},
		{&pgconn.PgError{Code: "53100"}, true},
		{&pgconn.PgError{Code: "57014"}, true},
		{&pgconn.PgError{Code: "23505"}, false},
		{&pgconn.PgError{Code: "42P01"}, false},
		{&pgconn.PgError{Code: "22P02"}, false},
		{context.DeadlineExceeded, true},
		{io.ErrUnexpectedEOF, true},
		{pgconn.ErrConnClosed, true},
		{errors.New("something else"), false},
	} {
		if got := Transient(c.err); got != c.want {
			t.Errorf("Transient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	if Code(errors.New("x")) != "" || Code(&pgconn.PgError{Code: "23505"}) != "23505" {
		t.Error("Code")
	}
	if !Undefined("42P01") || Undefined("23505") {
		t.Error("Undefined")
	}
}

// TestNetworkClosedWhileConnecting: a server that accepts the connection
// and closes it before the startup is done, as a proxy or load balancer in
// front of PostgreSQL does when its upstream is away (here a listener on
// loopback), fails pgx's connect with a *pgconn.ConnectError of an
// unexpected EOF: a failure of the network, worth retrying, not an
// internal error.
func TestNetworkClosedWhileConnecting(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// The startup message read, so that the close is an end of
			// stream (FIN), not a reset of unread data.
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			c.Read(make([]byte, 1024))
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, err := pgconn.Connect(ctx, "postgres://meterstore@"+ln.Addr().String()+"/db?sslmode=disable")
	if err == nil {
		conn.Close(ctx)
		t.Fatal("connected to a listener that closes every connection")
	}
	var ce *pgconn.ConnectError
	if !errors.As(err, &ce) || !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		t.Fatalf("%T %v: want a ConnectError of an unexpected EOF", err, err)
	}
	if !Network(err) || !Transient(err) || Kind(err) != series.Unavailable {
		t.Errorf("%v: Network %v, Transient %v, Kind %v", err, Network(err), Transient(err), Kind(err))
	}
	// The end of a stream that is no connection's is no network failure:
	// a delivery cut short is not worth retrying.
	if Network(fmt.Errorf("read the body: %w", io.ErrUnexpectedEOF)) {
		t.Error("an unexpected EOF of no connection counts as a network failure")
	}
}

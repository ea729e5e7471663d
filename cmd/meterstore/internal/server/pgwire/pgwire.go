// Package pgwire is the PostgreSQL wire protocol (v3) service of
// meterstore serve: the read-only statements of POST /v1/query, through
// the same front door (store.Prepare), for psql, JDBC, ODBC, psycopg,
// pgx and every tool built on them. Every table is a schema
// (power.readings); there is no default table.
//
// The protocol's messages are pgx's pgproto3. A session starts with TLS
// when the server has a key pair (SSLRequest), and is refused over plain
// TCP off loopback unless Options.AllowPlaintext. Its user is a token's
// name and its password the token (cleartext password authentication,
// hence TLS), which must hold scope query; the tables it lists limit the
// session's statements. Every failed login is answered alike and counted
// in meterstore.http.auth_failures.
//
// Statements run in the simple and the extended protocol, with bound
// parameters and portals that return their rows a limited number at a
// time; session statements (SET, SHOW, BEGIN, ...) are answered by the
// session (local.go), COPY (SELECT ...) TO STDOUT by copy.go, the
// introspection of catalogs by Options.Catalog. A CancelRequest cancels
// the statement running.
package pgwire

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/metrics"
	"github.com/meterstore/meterstore/store"
)

// Bounds of what a client may send.
const (
	// maxMessageBytes bounds one message after the startup: a statement
	// is bounded far lower by the store, and parameters with it.
	maxMessageBytes = 4 << 20
	// defaultMaxConnections bounds the sessions open at once without
	// Options.MaxConnections.
	defaultMaxConnections = 100
	// defaultStartupTimeout bounds the startup: TLS, the startup message
	// and the password.
	defaultStartupTimeout = 10 * time.Second
	// maxStatements and maxPortals bound what one session holds.
	maxStatements = 1000
	maxPortals    = 100
)

// Options configure a Server.
type Options struct {
	// Tokens are the tokens accepted, known by their hashes.
	Tokens []config.Token
	// TLS, when not nil, answers an SSLRequest; nil refuses it.
	TLS *tls.Config
	// AllowPlaintext admits sessions without TLS on an address other
	// than loopback (server.pg_allow_plaintext).
	AllowPlaintext bool
	// MaxConnections bounds the sessions open at once; zero is 100.
	MaxConnections int
	// MaxConcurrentQueries bounds the statements streaming at once; one
	// more is refused (53000). Zero means no bound.
	MaxConcurrentQueries int
	// StartupTimeout bounds a session's startup; zero is 10s.
	StartupTimeout time.Duration
	// IdleTimeout, if set, ends a session that sends nothing for as long
	// outside a transaction block.
	IdleTimeout time.Duration
	// Catalog, if set, answers the statements it handles; without it they
	// go to the store, which refuses them.
	Catalog Catalog
	// Meters receives the count of refused logins
	// (meterstore.http.auth_failures); nil records nothing.
	Meters metric.MeterProvider
	// Logger receives sessions, refusals and failures, never a token;
	// nil logs nothing.
	Logger *slog.Logger
}

// A Server answers the PostgreSQL protocol on the listeners it serves.
type Server struct {
	s       Store
	o       Options
	log     *slog.Logger
	metrics *metrics.Metrics
	keys    keys
	conns   chan struct{} // a token per session open
	slots   chan struct{} // a token per statement streaming; nil when unbounded
	// loopback says whether a local address is loopback; tests replace
	// it to see a session off loopback.
	loopback func(net.Addr) bool

	mu       sync.Mutex
	ln       []net.Listener
	open     map[*session]struct{}
	closing  bool
	sessions sync.WaitGroup
}

// New returns the server of the front door of s.
func New(s *store.Store, o Options) (*Server, error) {
	return newServer(frontDoor{s}, o)
}

// newServer returns the server of s.
func newServer(s Store, o Options) (*Server, error) {
	m, err := metrics.New(o.Meters)
	if err != nil {
		return nil, fmt.Errorf("pgwire: %w", err)
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.MaxConnections <= 0 {
		o.MaxConnections = defaultMaxConnections
	}
	if o.StartupTimeout <= 0 {
		o.StartupTimeout = defaultStartupTimeout
	}
	srv := &Server{s: s, o: o, log: log, metrics: m, conns: make(chan struct{}, o.MaxConnections),
		loopback: isLoopback, open: map[*session]struct{}{}}
	if n := o.MaxConcurrentQueries; n > 0 {
		srv.slots = make(chan struct{}, n)
	}
	return srv, nil
}

// isLoopback reports whether addr, a session's local address, is on
// loopback: a TCP address of loopback, or no TCP address at all (a Unix
// socket, a pipe), which never leaves the machine.
func isLoopback(addr net.Addr) bool {
	if a, ok := addr.(*net.TCPAddr); ok {
		return a.IP.IsLoopback()
	}
	return true
}

// ErrServerClosed is returned by Serve after Shutdown or Close.
var ErrServerClosed = errors.New("pgwire: server closed")

// Serve accepts sessions on ln until Shutdown or Close, and returns
// ErrServerClosed then.
func (srv *Server) Serve(ln net.Listener) error {
	srv.mu.Lock()
	if srv.closing {
		srv.mu.Unlock()
		return ErrServerClosed
	}
	srv.ln = append(srv.ln, ln)
	srv.mu.Unlock()
	for {
		c, err := ln.Accept()
		if err != nil {
			srv.mu.Lock()
			closing := srv.closing
			srv.mu.Unlock()
			if closing {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return fmt.Errorf("pgwire: %w", err)
		}
		srv.sessions.Add(1)
		go func() {
			defer srv.sessions.Done()
			srv.serveConn(context.Background(), c)
		}()
	}
}

// Shutdown stops accepting sessions, ends those waiting for a statement
// (FATAL 57P01, as PostgreSQL's smart shutdown does to idle sessions) and
// lets each statement running finish until ctx ends; then it closes the
// sessions left, their statements canceled.
func (srv *Server) Shutdown(ctx context.Context) error {
	srv.stopAccepting()
	srv.mu.Lock()
	for s := range srv.open {
		s.shutdown()
	}
	srv.mu.Unlock()
	done := make(chan struct{})
	go func() {
		srv.sessions.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		srv.Close()
		<-done
		return fmt.Errorf("pgwire: sessions still open: %w", ctx.Err())
	}
}

// Close stops accepting sessions and ends those open at once.
func (srv *Server) Close() {
	srv.stopAccepting()
	srv.mu.Lock()
	for s := range srv.open {
		s.terminate()
	}
	srv.mu.Unlock()
}

// stopAccepting closes the listeners; a session that starts later is
// refused.
func (srv *Server) stopAccepting() {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	srv.closing = true
	for _, ln := range srv.ln {
		ln.Close()
	}
}

// track records s as open, or refuses it while the server closes.
func (srv *Server) track(s *session) bool {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.closing {
		return false
	}
	srv.open[s] = struct{}{}
	return true
}

// untrack forgets s.
func (srv *Server) untrack(s *session) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	delete(srv.open, s)
}

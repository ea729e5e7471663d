package pgwire

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/auth"
	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/metrics"
)

// maxNegotiations bounds the requests before a startup message: an
// SSLRequest and a GSSENCRequest, each at most once.
const maxNegotiations = 3

// serveConn serves one connection: a session, or a cancel request.
func (srv *Server) serveConn(ctx context.Context, c net.Conn) {
	defer c.Close()
	select {
	case srv.conns <- struct{}{}:
		defer func() { <-srv.conns }()
	default:
		// Refused before anything is read, as PostgreSQL refuses a
		// connection past max_connections.
		refuse(c, &wireError{code: codeTooManyConnections, msg: "sorry, too many clients already", fatal: true})
		return
	}
	c.SetDeadline(time.Now().Add(srv.o.StartupTimeout))
	s, err := srv.startup(ctx, c)
	if err != nil {
		var we *wireError
		if errors.As(err, &we) && s != nil {
			s.be.Send(we.response())
			s.be.Flush()
		}
		srv.log.LogAttrs(ctx, slog.LevelInfo, "postgres session refused", slog.String("remote", c.RemoteAddr().String()),
			slog.String("err", err.Error()))
		return
	}
	if s == nil {
		return // a cancel request, answered by closing
	}
	c.SetDeadline(time.Time{})
	s.serve()
}

// refuse answers a connection with e and nothing else.
func refuse(c net.Conn, e *wireError) {
	be := pgproto3.NewBackend(c, c)
	be.Send(e.response())
	be.Flush()
}

// startup negotiates TLS, reads the startup message and authenticates
// its user. It returns a nil session for a cancel request, and with an
// error the session to answer it on, if one can be answered.
func (srv *Server) startup(ctx context.Context, c net.Conn) (*session, error) {
	s := &session{srv: srv, c: c, be: pgproto3.NewBackend(c, c)}
	secure := false
	for range maxNegotiations {
		msg, err := s.be.ReceiveStartupMessage()
		if err != nil {
			return nil, fmt.Errorf("pgwire: the startup message: %w", err)
		}
		switch m := msg.(type) {
		case *pgproto3.SSLRequest:
			if secure || srv.o.TLS == nil {
				if _, err := c.Write([]byte{'N'}); err != nil {
					return nil, fmt.Errorf("pgwire: %w", err)
				}
				continue
			}
			if _, err := c.Write([]byte{'S'}); err != nil {
				return nil, fmt.Errorf("pgwire: %w", err)
			}
			tc := tls.Server(c, srv.o.TLS)
			if err := tc.HandshakeContext(ctx); err != nil {
				return nil, fmt.Errorf("pgwire: TLS: %w", err)
			}
			s.c, s.be, secure = tc, pgproto3.NewBackend(tc, tc), true
		case *pgproto3.GSSEncRequest:
			if _, err := c.Write([]byte{'N'}); err != nil {
				return nil, fmt.Errorf("pgwire: %w", err)
			}
		case *pgproto3.CancelRequest:
			srv.keys.cancel(m.ProcessID, m.SecretKey)
			return nil, nil
		case *pgproto3.StartupMessage:
			s.be.SetMaxBodyLen(maxMessageBytes)
			return s, srv.login(ctx, s, m, secure)
		}
	}
	return s, &wireError{code: codeProtocolViolation, msg: "too many requests before the startup message", fatal: true}
}

// login authenticates the user of startup message m on s and starts the
// session: its parameters, its cancel key, ReadyForQuery.
func (srv *Server) login(ctx context.Context, s *session, m *pgproto3.StartupMessage, secure bool) error {
	if !secure && !srv.o.AllowPlaintext && !srv.loopback(s.c.LocalAddr()) {
		return &wireError{code: codeInvalidAuthorization, fatal: true,
			msg:  "this server requires TLS off loopback: connect with sslmode=require (or verify-full)",
			hint: "server.pg_allow_plaintext admits plain TCP behind a proxy that terminates TLS"}
	}
	user := m.Parameters["user"]
	if user == "" {
		return &wireError{code: codeInvalidAuthorization, msg: "no PostgreSQL user name specified in startup packet", fatal: true}
	}
	s.be.Send(&pgproto3.AuthenticationCleartextPassword{})
	if err := s.be.Flush(); err != nil {
		return fmt.Errorf("pgwire: %w", err)
	}
	if err := s.be.SetAuthType(pgproto3.AuthTypeCleartextPassword); err != nil {
		return fmt.Errorf("pgwire: %w", err)
	}
	msg, err := s.be.Receive()
	if err != nil {
		return fmt.Errorf("pgwire: the password: %w", err)
	}
	pm, ok := msg.(*pgproto3.PasswordMessage)
	if !ok {
		return &wireError{code: codeProtocolViolation, msg: fmt.Sprintf("expected a password message, got %T", msg), fatal: true}
	}
	t, ok := auth.Match(srv.o.Tokens, pm.Password)
	switch {
	case !ok || t.Name != user:
		return srv.refuseLogin(ctx, s, metrics.ReasonInvalid, user, "")
	case !auth.HasScope(t, config.ScopeQuery):
		return srv.refuseLogin(ctx, s, metrics.ReasonForbidden, user, t.Name)
	}
	if !srv.track(s) {
		return &wireError{code: codeAdminShutdown, msg: "the server is shutting down", fatal: true}
	}
	s.tok, s.user = t, user
	s.open(m.Parameters)
	return nil
}

// refuseLogin counts, logs and answers a failed login: the same answer
// whatever was wrong, so that it tells nothing of the tokens.
func (srv *Server) refuseLogin(ctx context.Context, s *session, reason, user, name string) error {
	srv.metrics.AuthFailureVia(ctx, metrics.ProtocolPostgres, reason)
	level := slog.LevelWarn
	if reason == metrics.ReasonForbidden {
		level = slog.LevelInfo
	}
	srv.log.LogAttrs(ctx, level, "postgres login refused", slog.String("reason", reason),
		slog.String("token", name), slog.String("remote", s.c.RemoteAddr().String()))
	return &wireError{code: codeInvalidPassword, msg: fmt.Sprintf("password authentication failed for user %q", user), fatal: true}
}

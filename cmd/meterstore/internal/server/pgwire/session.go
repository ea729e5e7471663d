package pgwire

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/store"
)

// Transaction states as ReadyForQuery reports them.
const (
	txIdle   = 'I'
	txBlock  = 'T'
	txFailed = 'E'
)

// A session is one authenticated connection: its settings, transaction
// state, prepared statements and portals.
type session struct {
	srv    *Server
	c      net.Conn
	be     *pgproto3.Backend
	tok    config.Token
	user   string
	pid    uint32
	secret [4]byte

	settings *settings
	tx       byte
	// savepoints are the transaction block's, oldest first.
	savepoints []savepoint
	stmts      map[string]*prepared
	portals    map[string]*portal
	// skipping is true after an error in the extended protocol: messages
	// are discarded until Sync.
	skipping bool
	// last is the header of the last statement the store ran, for SHOW
	// meterstore.watermark and meterstore.tiers.
	last *store.ResultHeader

	mu      sync.Mutex
	running map[*cursor]struct{} // the statements running, which a cancel ends
	idle    bool                 // waiting for a statement after ReadyForQuery
	closing bool                 // the server shuts down
}

// open sends what a session starts with: AuthenticationOk, the reported
// parameters, the cancel key, ReadyForQuery.
func (s *session) open(params map[string]string) {
	s.srv.keys.add(s)
	s.settings = newSettings(s.user, s.srv.serverVersion())
	s.tx = txIdle
	s.stmts, s.portals = map[string]*prepared{}, map[string]*portal{}
	s.be.Send(&pgproto3.AuthenticationOk{})
	for _, n := range s.settings.startup(params) {
		s.be.Send(&pgproto3.NoticeResponse{Severity: "NOTICE", SeverityUnlocalized: "NOTICE", Code: "00000", Message: n})
	}
	for _, p := range s.settings.reported() {
		s.be.Send(&pgproto3.ParameterStatus{Name: p[0], Value: p[1]})
	}
	s.be.Send(&pgproto3.BackendKeyData{ProcessID: s.pid, SecretKey: s.secret[:]})
	s.srv.log.Info("postgres session", "token", s.tok.Name, "remote", s.c.RemoteAddr().String(),
		"application", s.settings.get("application_name"))
	s.ready()
}

// serverVersion is the server_version reported: the catalog's, else that
// of the PostgreSQL whose behaviour the session follows.
func (srv *Server) serverVersion() string {
	if srv.o.Catalog != nil {
		if v := srv.o.Catalog.ServerVersion(); v != "" {
			return v
		}
	}
	return "15.0"
}

// serve reads and answers messages until the client terminates, the
// connection fails or the server shuts down.
func (s *session) serve() {
	defer s.end()
	if err := s.flushed(); err != nil {
		return
	}
	for {
		msg, err := s.receive()
		if err != nil {
			s.readFailed(err)
			return
		}
		switch m := msg.(type) {
		case *pgproto3.Query:
			s.simpleQuery(m.String)
			s.ready()
		case *pgproto3.Parse, *pgproto3.Bind, *pgproto3.Describe, *pgproto3.Execute, *pgproto3.Close:
			if s.skipping {
				continue
			}
			if err := s.extended(m); err != nil {
				s.fail(err)
				s.skipping = true
			}
		case *pgproto3.Sync:
			s.skipping = false
			s.sync()
			s.ready()
		case *pgproto3.Flush:
			if err := s.be.Flush(); err != nil {
				return
			}
		case *pgproto3.Terminate:
			return
		case *pgproto3.CopyData, *pgproto3.CopyDone, *pgproto3.CopyFail:
			// Left of a COPY FROM that was refused: ignored, as
			// PostgreSQL ignores them outside one.
		default:
			e := protocolError("unexpected message %T", msg)
			e.fatal = true
			s.send(e.response())
			return
		}
		if err := s.flushed(); err != nil {
			return
		}
	}
}

// receive reads the next message; after ReadyForQuery it is idle, which
// a shutdown ends and server's IdleTimeout bounds outside a transaction
// block.
func (s *session) receive() (pgproto3.FrontendMessage, error) {
	s.mu.Lock()
	if s.idle && s.closing {
		s.mu.Unlock()
		return nil, errShutdown
	}
	idle := s.idle
	s.mu.Unlock()
	if idle && s.srv.o.IdleTimeout > 0 && s.tx == txIdle {
		s.c.SetReadDeadline(time.Now().Add(s.srv.o.IdleTimeout))
	}
	msg, err := s.be.Receive()
	s.mu.Lock()
	s.idle = false
	closing := s.closing
	s.mu.Unlock()
	if idle && s.srv.o.IdleTimeout > 0 {
		s.c.SetReadDeadline(time.Time{})
	}
	if err != nil && closing && errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, errShutdown
	}
	return msg, err
}

// errShutdown ends an idle session when the server shuts down.
var errShutdown = errors.New("pgwire: the server is shutting down")

// readFailed ends the session on a failed read: a shutdown or an idle
// timeout is told to the client; a message too long or malformed too.
func (s *session) readFailed(err error) {
	var e *wireError
	switch {
	case errors.Is(err, errShutdown):
		e = &wireError{code: codeAdminShutdown, msg: "terminating connection due to administrator command"}
	case errors.Is(err, os.ErrDeadlineExceeded):
		e = &wireError{code: "57P05", msg: "terminating connection due to idle-session timeout"}
	case errors.Is(err, net.ErrClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return
	default:
		e = protocolError("%v", err)
	}
	e.fatal = true
	s.send(e.response())
	s.be.Flush()
}

// end releases what the session holds.
func (s *session) end() {
	for name := range s.portals {
		s.closePortal(name)
	}
	s.srv.keys.remove(s)
	s.srv.untrack(s)
	s.srv.log.Debug("postgres session ended", "token", s.tok.Name)
}

// send buffers msg.
func (s *session) send(msg pgproto3.BackendMessage) { s.be.Send(msg) }

// flushed writes what is buffered.
func (s *session) flushed() error { return s.be.Flush() }

// ready sends ReadyForQuery with the transaction state; the session is
// idle until the next message.
func (s *session) ready() {
	s.send(&pgproto3.ReadyForQuery{TxStatus: s.tx})
	s.mu.Lock()
	s.idle = true
	s.mu.Unlock()
}

// fail answers err, a statement's failure, and fails the transaction
// block if one is open.
func (s *session) fail(err error) {
	e := classify(context.Background(), err)
	if e.code == codeInternal {
		s.srv.log.Error("postgres statement failed", "token", s.tok.Name, "err", err)
	} else {
		s.srv.log.LogAttrs(context.Background(), slog.LevelDebug, "postgres statement refused",
			slog.String("token", s.tok.Name), slog.String("code", e.code))
	}
	s.send(e.response())
	if s.tx == txBlock {
		s.tx = txFailed
	}
}

// cancelRunning cancels the statements running, those of portals
// suspended too, as a CancelRequest asks.
func (s *session) cancelRunning() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.running {
		c.canceled.Store(true)
		c.cancel()
	}
}

// shutdown ends the session once no statement runs: at once if it is
// idle, else after the statement's ReadyForQuery.
func (s *session) shutdown() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing = true
	if s.idle {
		s.c.SetReadDeadline(time.Now())
	}
}

// terminate ends the session at once: its statement canceled, its
// connection closed.
func (s *session) terminate() {
	s.cancelRunning()
	s.c.Close()
}

// Package lifecycle runs what meterstore serve answers, from its
// listeners to its exit: it listens (HTTP, Flight SQL and the PostgreSQL
// protocol, with TLS when
// configured) before the deployment opens, so that an address in use or
// an unreadable key fails at once, before a private PostgreSQL is started
// for nothing; then it runs the HTTP API (httpapi), Flight SQL
// (flightapi), the PostgreSQL protocol (pgwire) and the maintenance loop as the actors of one group, which stops them
// all, each within server.shutdown_timeout, when the command's context
// ends (the first SIGTERM or SIGINT) or one of them fails. A second signal
// ends the process at once.
//
// The command (cmd/meterstore/serve.go) only wires its flags to it.
package lifecycle

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"

	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/httpapi"
	"github.com/meterstore/meterstore/config"
)

// Options say where a Server reports and how it ends at once.
type Options struct {
	// Logger receives what the server logs; nil logs nothing.
	Logger *slog.Logger
	// Out receives a line per address served, "serving http://...",
	// "serving flight sql grpc://..." and "serving postgres
	// postgres://...", for whoever started the process;
	// nil writes them nowhere.
	Out io.Writer
	// AtOnce, if set, is called on a second SIGTERM or SIGINT, the first
	// having begun the shutdown: it ends the process.
	AtOnce func(os.Signal)
}

// A Server is meterstore serve of one configuration: its listeners, TLS
// and meters, made before the deployment opens. Run serves it; Close
// releases what New made.
type Server struct {
	cfg *config.Config
	o   Options
	log *slog.Logger
	tls *tls.Config  // nil: plain HTTP and gRPC
	ln  net.Listener // server.listen
	fln net.Listener // server.flight_listen; nil when it is empty
	pln net.Listener // server.pg_listen; nil when it is empty
	// meters record the store's instruments and the server's own, which
	// GET /metrics exposes (exposition).
	meters     *sdkmetric.MeterProvider
	exposition *httpapi.Exposition
	// unwatch stops watching for a second signal.
	unwatch func()
}

// New makes the server of cfg: it watches for a second signal, loads the
// TLS key pair and listens on server.listen, server.flight_listen and
// server.pg_listen.
func New(cfg *config.Config, o Options) (_ *Server, err error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	sv := &Server{cfg: cfg, o: o, log: log, unwatch: watchSecondSignal(o.AtOnce)}
	defer func() {
		if err != nil {
			sv.Close(context.Background())
		}
	}()
	sc := cfg.Server
	if sv.tls, err = serverTLS(sc); err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	if len(sc.Tokens) == 0 {
		log.Warn("no [[server.token]] configured: every endpoint but /healthz refuses every request; make one with meterstore token")
	}
	if sv.ln, err = net.Listen("tcp", sc.Listen); err != nil {
		return nil, fmt.Errorf("serve: server.listen: %w", err)
	}
	if sc.FlightListen != "" {
		if sv.fln, err = net.Listen("tcp", sc.FlightListen); err != nil {
			return nil, fmt.Errorf("serve: server.flight_listen: %w", err)
		}
	}
	if sc.PgListen != "" {
		if sv.pln, err = net.Listen("tcp", sc.PgListen); err != nil {
			return nil, fmt.Errorf("serve: server.pg_listen: %w", err)
		}
	}
	if sv.meters, sv.exposition, err = httpapi.Prometheus(); err != nil {
		return nil, err
	}
	return sv, nil
}

// Meters is the provider the store records its metrics with
// (store.WithMeters), so that GET /metrics exposes them beside the
// server's own.
func (sv *Server) Meters() metric.MeterProvider { return sv.meters }

// Close releases what New made: the meters, the listeners and the watch
// for a second signal.
func (sv *Server) Close(ctx context.Context) {
	if sv.meters != nil {
		sv.meters.Shutdown(ctx)
	}
	if sv.fln != nil {
		sv.fln.Close()
	}
	if sv.pln != nil {
		sv.pln.Close()
	}
	if sv.ln != nil {
		sv.ln.Close()
	}
	sv.unwatch()
}

// serverTLS returns the TLS configuration of server.tls_cert and
// server.tls_key, nil when the server speaks plain HTTP.
func serverTLS(sc config.Server) (*tls.Config, error) {
	if sc.TLSCert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(sc.TLSCert, sc.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("server.tls_cert and server.tls_key: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

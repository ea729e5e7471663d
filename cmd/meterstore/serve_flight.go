package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/flightapi"
	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/store"
)

// listenFlight listens on server.flight_listen; nil when it is empty.
func listenFlight(sc config.Server) (net.Listener, error) {
	if sc.FlightListen == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", sc.FlightListen)
	if err != nil {
		return nil, fmt.Errorf("serve: server.flight_listen: %w", err)
	}
	return ln, nil
}

// serveFlight serves Arrow Flight SQL over s on ln, when ln is not nil,
// says where on out, and returns the function that stops it: within
// timeout for the calls in flight, then at once. The stop runs in the
// background; its channel receives nil when the service is stopped.
func serveFlight(out io.Writer, log *slog.Logger, s *store.Store, sc config.Server, ln net.Listener,
	tlsConfig *tls.Config, meters metric.MeterProvider) (stop func(timeout time.Duration) <-chan error, err error) {
	if ln == nil {
		return func(time.Duration) <-chan error {
			done := make(chan error, 1)
			done <- nil
			return done
		}, nil
	}
	g, err := flightapi.New(s, flightapi.Options{Tokens: sc.Tokens, TLS: tlsConfig,
		MaxConcurrentQueries: sc.MaxConcurrentRequests, Meters: meters, Logger: log})
	if err != nil {
		return nil, err
	}
	go func() {
		if err := g.Serve(ln); err != nil {
			log.Error("flight sql: serving stopped", "err", err)
		}
	}()
	scheme := "grpc"
	if tlsConfig != nil {
		scheme = "grpc+tls"
	}
	fmt.Fprintf(out, "serving flight sql %s://%s\n", scheme, ln.Addr())
	log.Info("serving flight sql", "address", ln.Addr().String(), "tls", tlsConfig != nil)
	return func(timeout time.Duration) <-chan error {
		done := make(chan error, 1)
		go func() {
			stopped := make(chan struct{})
			go func() {
				g.GracefulStop()
				close(stopped)
			}()
			select {
			case <-stopped:
				done <- nil
			case <-time.After(timeout):
				g.Stop()
				done <- fmt.Errorf("serve: Flight SQL calls still in flight after server.shutdown_timeout %v", config.Duration(timeout))
			}
		}()
		return done
	}, nil
}

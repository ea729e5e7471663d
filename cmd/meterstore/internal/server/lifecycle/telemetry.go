package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/httpapi"
	"github.com/meterstore/meterstore/config"
)

// ServeTelemetry serves the metrics of a command that runs no server
// (maintain --metrics-listen) on addr: GET /metrics, the Prometheus
// exposition, for a [[server.token]] with scope admin, and GET /healthz,
// over TLS when server.tls_cert is set, as serve does. It says where on w.
// The store records with the returned provider; stop ends the serving
// and the provider.
func ServeTelemetry(w io.Writer, log *slog.Logger, sc config.Server, addr string) (meters *sdkmetric.MeterProvider, stop func(), err error) {
	tlsConfig, err := serverTLS(sc)
	if err != nil {
		return nil, nil, fmt.Errorf("--metrics-listen: %w", err)
	}
	// The rule of server.listen: a bearer token goes in the clear only
	// over loopback.
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, fmt.Errorf("--metrics-listen %q: want host:port, as in 127.0.0.1:9464", addr)
	}
	if ip := net.ParseIP(host); tlsConfig == nil && !sc.AllowPlainHTTP && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, nil, fmt.Errorf("--metrics-listen %q is not a loopback address, and plain HTTP would send the bearer token in the clear: "+
			"set server.tls_cert and server.tls_key, or server.allow_plain_http = true behind a proxy that terminates TLS", addr)
	}
	if len(sc.Tokens) == 0 {
		log.Warn("no [[server.token]] configured: /metrics refuses every request; make one with scope admin with meterstore token")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("--metrics-listen: %w", err)
	}
	meters, exposition, err := httpapi.Prometheus()
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	h, err := httpapi.NewTelemetry(httpapi.Options{Tokens: sc.Tokens, Meters: meters, Metrics: exposition, Logger: log})
	if err != nil {
		ln.Close()
		meters.Shutdown(context.Background())
		return nil, nil, err
	}
	srv := &http.Server{
		Handler:           h,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      time.Minute,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		var err error
		if tlsConfig != nil {
			err = srv.ServeTLS(ln, "", "")
		} else {
			err = srv.Serve(ln)
		}
		if !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics: serving stopped", "err", err)
		}
	}()
	scheme := "http"
	if tlsConfig != nil {
		scheme = "https"
	}
	fmt.Fprintf(w, "metrics at %s://%s/metrics\n", scheme, ln.Addr())
	stop = func() {
		// A scrape in flight may finish; a slow one is not waited for.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close()
		}
		<-served
		meters.Shutdown(context.Background())
	}
	return meters, stop, nil
}

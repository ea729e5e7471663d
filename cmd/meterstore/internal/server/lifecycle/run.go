package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"time"

	"google.golang.org/grpc"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/flightapi"
	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/httpapi"
	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/pgcatalog"
	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/pgwire"
	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/store"
)

// Run serves s until ctx ends or a part fails: the HTTP API on
// server.listen, Flight SQL on server.flight_listen and the PostgreSQL
// protocol on server.pg_listen when set, and the
// maintenance loop of the configuration. Then it stops each, letting the
// requests, calls and maintenance cycle in flight finish within
// server.shutdown_timeout, and returns what went wrong.
func (sv *Server) Run(ctx context.Context, s *store.Store) error {
	sc, log := sv.cfg.Server, sv.log
	// The REST catalog serves MeterStore's own catalog; a deployment on
	// another catalog (catalog.type rest or sql) has its catalog server.
	cat := s.ServedCatalog().Catalog
	if cat == nil {
		log.Info("catalog.type is not log: /iceberg does not serve the catalog", "catalog", sv.cfg.Catalog.Type)
	}
	h, err := httpapi.New(s, httpapi.Options{Tokens: sc.Tokens, MaxBodyBytes: sc.MaxBodyBytes, Logger: log,
		Meters: sv.meters, Metrics: sv.exposition, MaxConcurrentRequests: sc.MaxConcurrentRequests,
		MaxRunningQueries:    runningQueries(sc.MaxRunningQueries, sv.cfg.Query.Threads, runtime.GOMAXPROCS(0)),
		IdempotencyRetention: sc.IdempotencyRetention,
		Catalog:              cat, CatalogWritable: sc.CatalogWritable, CatalogTokenLifetime: sc.CatalogTokenLifetime,
		CatalogName: sc.CatalogName, CatalogVend: vendKeys(sc.CatalogVend, cat)})
	if err != nil {
		return err
	}
	var fg *grpc.Server
	if sv.fln != nil {
		if fg, err = flightapi.New(s, flightapi.Options{Tokens: sc.Tokens, TLS: sv.tls,
			MaxConcurrentQueries: sc.MaxConcurrentRequests, Meters: sv.meters, Logger: log}); err != nil {
			return err
		}
	}
	var pg *pgwire.Server
	if sv.pln != nil {
		var cat pgwire.Catalog // nil, never a nil *pgcatalog.Catalog
		if c := pgCatalog(ctx, s, log); c != nil {
			defer c.Close()
			cat = c
		}
		if pg, err = pgwire.New(s, pgwire.Options{Tokens: sc.Tokens, TLS: sv.tls, AllowPlaintext: sc.PgAllowPlaintext,
			MaxConcurrentQueries: sc.MaxConcurrentRequests, StartupTimeout: min(sc.ReadTimeout, 10*time.Second),
			Catalog: cat, Meters: sv.meters, Logger: log}); err != nil {
			return err
		}
	}
	g := &group{stopping: func() {
		log.Info("shutting down", "timeout", config.Duration(sc.ShutdownTimeout).String())
	}}
	g.add(untilDone(ctx))
	g.add(sv.http(ctx, h))
	// The loop outlives the signal: its actor stops it, within the bound.
	g.add(sv.maintenance(s.MaintenanceFor(sv.cfg).OnCycle(sv.logCycle).Start(context.WithoutCancel(ctx))))
	if fg != nil {
		g.add(sv.flight(fg))
	}
	if pg != nil {
		g.add(sv.postgres(pg))
	}
	return g.run()
}

// pgCatalog opens the catalog the PostgreSQL protocol answers psql's \dt,
// pgjdbc's getTables and the like from: a shape database in s's cluster.
// Where it cannot be opened (the store's role may not create it) the
// server runs without one, nil, and such statements are refused.
func pgCatalog(ctx context.Context, s *store.Store, log *slog.Logger) *pgcatalog.Catalog {
	c, err := pgcatalog.Open(ctx, s, pgcatalog.Options{User: pgwire.User, Logger: log})
	if err != nil {
		log.Warn("postgres: catalog statements are refused", "err", err)
		return nil
	}
	return c
}

// untilDone is the actor that returns when ctx ends: the first SIGTERM or
// SIGINT.
func untilDone(ctx context.Context) (execute, interrupt func() error) {
	quit := make(chan struct{})
	return func() error {
			select {
			case <-ctx.Done():
			case <-quit:
			}
			return nil
		}, func() error {
			close(quit)
			return nil
		}
}

// http is the actor of the HTTP API, h on server.listen: its interrupt
// stops accepting connections and lets the requests in flight finish
// within server.shutdown_timeout, then closes what is left. It says where
// it serves as soon as it is added, the address being bound.
func (sv *Server) http(ctx context.Context, h http.Handler) (execute, interrupt func() error) {
	sc := sv.cfg.Server
	srv := &http.Server{
		Handler:           h,
		TLSConfig:         sv.tls,
		ReadHeaderTimeout: min(sc.ReadTimeout, 10*time.Second),
		ReadTimeout:       sc.ReadTimeout,
		WriteTimeout:      sc.WriteTimeout,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(sv.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	scheme := "http"
	if sv.tls != nil {
		scheme = "https"
	}
	fmt.Fprintf(sv.o.Out, "serving %s://%s\n", scheme, sv.ln.Addr())
	sv.log.Info("serving", "address", sv.ln.Addr().String(), "tls", sv.tls != nil, "tokens", len(sc.Tokens))
	return func() error {
			var err error
			if sv.tls != nil {
				err = srv.ServeTLS(sv.ln, "", "")
			} else {
				err = srv.Serve(sv.ln)
			}
			if errors.Is(err, http.ErrServerClosed) {
				return nil // the interrupt's shutdown, which says how it went
			}
			return fmt.Errorf("serve: %w", err)
		}, func() error {
			sctx, cancel := context.WithTimeout(context.Background(), sc.ShutdownTimeout)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil {
				srv.Close()
				return fmt.Errorf("serve: requests still in flight after server.shutdown_timeout %v: %w",
					config.Duration(sc.ShutdownTimeout), err)
			}
			return nil
		}
}

// maintenance is the actor of the maintenance loop m: its interrupt stops
// the loop and lets the cycle in flight finish within
// server.shutdown_timeout; past it, the actor returns all the same, and
// the cycle ends with the store.
func (sv *Server) maintenance(m *store.MaintenanceHandle) (execute, interrupt func() error) {
	timeout := sv.cfg.Server.ShutdownTimeout
	gaveUp := make(chan struct{})
	return func() error {
			select {
			case <-m.Done():
			case <-gaveUp:
			}
			return nil
		}, func() error {
			go m.Stop()
			select {
			case <-m.Done():
				return nil
			case <-time.After(timeout):
				close(gaveUp)
				return fmt.Errorf("serve: the maintenance cycle in flight did not finish within server.shutdown_timeout %v",
					config.Duration(timeout))
			}
		}
}

// logCycle logs each archival commit of a maintenance cycle, a line per
// window with its rows and the watermark it moved W to, so that the log
// says when and why W moved.
func (sv *Server) logCycle(o *store.MaintenanceOutcome) {
	for _, t := range o.Tables {
		for _, w := range t.Archive.Windows {
			sv.log.Info("archived", "table", t.Table, "from", w.From.UTC().Format(time.RFC3339), "to", w.To.UTC().Format(time.RFC3339),
				"rows", w.Rows, "watermark", w.To.UTC().Format(time.RFC3339), "recovered", w.Recovered)
		}
	}
}

// flight is the actor of the Flight SQL service g on
// server.flight_listen: its interrupt stops it gracefully, the calls in
// flight allowed server.shutdown_timeout, then at once. A failure to
// serve is logged and stops nothing else: the HTTP API serves on. It says
// where it serves as soon as it is added.
func (sv *Server) flight(g *grpc.Server) (execute, interrupt func() error) {
	scheme := "grpc"
	if sv.tls != nil {
		scheme = "grpc+tls"
	}
	fmt.Fprintf(sv.o.Out, "serving flight sql %s://%s\n", scheme, sv.fln.Addr())
	sv.log.Info("serving flight sql", "address", sv.fln.Addr().String(), "tls", sv.tls != nil)
	stopped := make(chan struct{})
	return func() error {
			if err := g.Serve(sv.fln); err != nil {
				sv.log.Error("flight sql: serving stopped", "err", err)
			}
			<-stopped
			return nil
		}, func() error {
			defer close(stopped)
			timeout := sv.cfg.Server.ShutdownTimeout
			graceful := make(chan struct{})
			go func() {
				g.GracefulStop()
				close(graceful)
			}()
			select {
			case <-graceful:
				return nil
			case <-time.After(timeout):
				g.Stop()
				return fmt.Errorf("serve: Flight SQL calls still in flight after server.shutdown_timeout %v", config.Duration(timeout))
			}
		}
}

// postgres is the actor of the PostgreSQL protocol service srv on
// server.pg_listen: its interrupt ends the idle sessions and lets the
// statements running finish within server.shutdown_timeout, then ends
// them. A failure to serve is logged and stops nothing else. It says
// where it serves as soon as it is added.
func (sv *Server) postgres(srv *pgwire.Server) (execute, interrupt func() error) {
	fmt.Fprintf(sv.o.Out, "serving postgres postgres://%s\n", sv.pln.Addr())
	sv.log.Info("serving postgres", "address", sv.pln.Addr().String(), "tls", sv.tls != nil)
	stopped := make(chan struct{})
	return func() error {
			if err := srv.Serve(sv.pln); err != nil && !errors.Is(err, pgwire.ErrServerClosed) {
				sv.log.Error("postgres: serving stopped", "err", err)
			}
			<-stopped
			return nil
		}, func() error {
			defer close(stopped)
			ctx, cancel := context.WithTimeout(context.Background(), sv.cfg.Server.ShutdownTimeout)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil {
				return fmt.Errorf("serve: PostgreSQL statements still running after server.shutdown_timeout %v: %w",
					config.Duration(sv.cfg.Server.ShutdownTimeout), err)
			}
			return nil
		}
}

// vendKeys returns the key pair the catalog vends, nil if it vends none.
func vendKeys(v config.CatalogVend, cat *catalog.Catalog) *catalog.S3Keys {
	if !v.Enabled || cat == nil {
		return nil
	}
	return &catalog.S3Keys{AccessKeyID: v.AccessKeyID, SecretAccessKey: string(v.SecretAccessKey)}
}

package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/httpapi"
	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/store"
)

func newServe() *cobra.Command {
	var d deployment
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API and run the maintenance loop until SIGTERM",
		Long: `Opens the deployment once (with postgres.url empty, its private PostgreSQL,
which other commands on the same data_dir use beside it), runs the maintenance loop and serves the
HTTP API of the [server] section: GET /healthz, /readyz and /v1/status,
and POST /v1/tables/{table}/readings (a CSV or JSON lines delivery, in
atomic batches) and POST /v1/query (a SELECT, answered as CSV or JSON
lines), with the bearer tokens of its [[server.token]] sections. With
server.flight_listen set, the same tokens query over Arrow Flight SQL
there (how tables are named: see docs/serving.md). GET /metrics, for
a token with scope admin, is the Prometheus exposition of the store's
metrics and the server's own. /iceberg is the Iceberg REST catalog
(uri = <base>/iceberg) for tokens with scope catalog, read-only unless
server.catalog_writable; POST /iceberg/v1/oauth/tokens exchanges a token's
name and text (client id and secret) for an access token. With
server.catalog_vend_credentials, a token that also holds scope storage
gets the S3 key pair of server.catalog_vend_* with each table it loads,
when its client asks (X-Iceberg-Access-Delegation: vended-credentials).

An ingest sent with an Idempotency-Key header has its answer (200 or 422)
recorded in PostgreSQL for server.idempotency_retention: a retry with the
same key and body is answered with it again without being run.
server.max_concurrent_requests bounds the ingests in flight and, apart,
the queries; one more is answered 503 with Retry-After at once.

SIGTERM or SIGINT stops accepting connections, lets the requests and the
maintenance cycle in flight finish within server.shutdown_timeout, closes
the deployment and exits 0; a second signal exits at once with status 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd, &d)
		},
	}
	d.flags(cmd, false)
	return cmd
}

func serve(cmd *cobra.Command, d *deployment) error {
	ctx := cmd.Context()
	log := logger()
	cfg, err := d.load()
	if err != nil {
		return err
	}
	// The first SIGTERM or SIGINT cancels ctx (see main) and starts the
	// shutdown; a second one ends the process at once.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for n := 0; ; {
			select {
			case sig := <-sigs:
				if n++; n == 2 {
					fmt.Fprintf(os.Stderr, "meterstore: a second %v: exiting at once\n", sig)
					os.Exit(exitPermanent)
				}
			case <-done:
				return
			}
		}
	}()
	sc := cfg.Server
	tlsConfig, err := serverTLS(sc)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if len(sc.Tokens) == 0 {
		log.Warn("no [[server.token]] configured: every endpoint but /healthz refuses every request; make one with meterstore token")
	}
	// Listen before opening the deployment: an address in use fails at
	// once, before a private PostgreSQL is started for nothing.
	ln, err := net.Listen("tcp", sc.Listen)
	if err != nil {
		return fmt.Errorf("serve: server.listen: %w", err)
	}
	defer ln.Close()
	fln, err := listenFlight(sc)
	if err != nil {
		return err
	}
	if fln != nil {
		defer fln.Close()
	}

	// The store's instruments and the server's own record through one
	// provider, which GET /metrics exposes.
	meters, exposition, err := httpapi.Prometheus()
	if err != nil {
		return err
	}
	defer meters.Shutdown(context.WithoutCancel(ctx))
	s, _, err := d.open(ctx, store.WithMeters(meters))
	if err != nil {
		return err
	}
	defer s.Close()
	// The REST catalog serves MeterStore's own catalog; a deployment on
	// another catalog (catalog.type rest or sql) has its catalog server.
	cat := s.ServedCatalog().Catalog
	if cat == nil {
		log.Info("catalog.type is not log: /iceberg does not serve the catalog", "catalog", cfg.Catalog.Type)
	}
	h, err := httpapi.New(s, httpapi.Options{Tokens: sc.Tokens, MaxBodyBytes: sc.MaxBodyBytes, Logger: log,
		Meters: meters, Metrics: exposition, MaxConcurrentRequests: sc.MaxConcurrentRequests,
		IdempotencyRetention: sc.IdempotencyRetention,
		Catalog:              cat, CatalogWritable: sc.CatalogWritable, CatalogTokenLifetime: sc.CatalogTokenLifetime,
		CatalogName: sc.CatalogName, CatalogVend: vendKeys(sc.CatalogVend, cat)})
	if err != nil {
		return err
	}
	// The loop outlives the signal: shutdown stops it, within the bound.
	maint := s.MaintenanceFor(cfg).Start(context.WithoutCancel(ctx))

	srv := &http.Server{
		Handler:           h,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: min(sc.ReadTimeout, 10*time.Second),
		ReadTimeout:       sc.ReadTimeout,
		WriteTimeout:      sc.WriteTimeout,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	served := make(chan error, 1)
	go func() {
		if tlsConfig != nil {
			served <- srv.ServeTLS(ln, "", "")
		} else {
			served <- srv.Serve(ln)
		}
	}()
	scheme := "http"
	if tlsConfig != nil {
		scheme = "https"
	}
	fmt.Fprintf(cmd.OutOrStdout(), "serving %s://%s\n", scheme, ln.Addr())
	log.Info("serving", "address", ln.Addr().String(), "tls", tlsConfig != nil, "tokens", len(sc.Tokens))
	stopFlight, err := serveFlight(cmd.OutOrStdout(), log, s, sc, fln, tlsConfig, meters)
	if err != nil {
		srv.Close()
		maint.Stop()
		return err
	}

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
	}
	log.Info("shutting down", "timeout", config.Duration(sc.ShutdownTimeout).String())
	flightStopped := stopFlight(sc.ShutdownTimeout)
	err = shutdown(srv, maint.Stop, sc.ShutdownTimeout, serveErr)
	return errors.Join(err, <-flightStopped)
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

// shutdown stops the server and the maintenance loop, each allowed to
// finish what is in flight within timeout, and returns what went wrong.
func shutdown(srv *http.Server, stopMaintenance func(), timeout time.Duration, serveErr error) error {
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	stopped := make(chan struct{})
	go func() {
		stopMaintenance()
		close(stopped)
	}()
	var errs []error
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		errs = append(errs, fmt.Errorf("serve: %w", serveErr))
	}
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		errs = append(errs, fmt.Errorf("serve: requests still in flight after server.shutdown_timeout %v: %w",
			config.Duration(timeout), err))
	}
	select {
	case <-stopped:
	case <-sctx.Done():
		errs = append(errs, fmt.Errorf("serve: the maintenance cycle in flight did not finish within server.shutdown_timeout %v",
			config.Duration(timeout)))
	}
	return errors.Join(errs...)
}

func newToken() *cobra.Command {
	var (
		name           string
		scopes, tables []string
	)
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Make a bearer token for meterstore serve and print its [[server.token]] section",
		Long: `Prints a new random token (32 bytes from the system's CSPRNG, base64url) and
the [[server.token]] section to add to the configuration, which holds only
the token's SHA-256. The token is shown this once: give it to the client.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name == "" {
				name = "token-" + strconv.FormatInt(time.Now().Unix(), 10)
			}
			tok, hash, err := config.NewToken()
			if err != nil {
				return err
			}
			var b strings.Builder
			fmt.Fprintf(&b, "[[server.token]]\nname = %q\nhash = %q\nscopes = %s\n", name, hash, tomlList(scopes))
			if len(tables) > 0 {
				fmt.Fprintf(&b, "tables = %s\n", tomlList(tables))
			}
			// The section must be one check accepts: parse it alone,
			// with the tables it names declared.
			check := b.String()
			for _, t := range tables {
				check += fmt.Sprintf("[[table]]\nname = %q\n", t)
			}
			if _, err := config.Parse([]byte(check), "", nil); err != nil {
				return fmt.Errorf("token: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "# The token; give it to the client, it is not shown again:\n%s\n\n"+
				"# Add this section to the configuration:\n%s", tok, b.String())
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "the token's name in logs (default token-<unix time>)")
	cmd.Flags().StringSliceVar(&scopes, "scope", []string{config.ScopeQuery}, "what it may do: ingest, query, catalog, storage, admin")
	cmd.Flags().StringSliceVar(&tables, "table", nil, "the tables it may touch (default every one)")
	return cmd
}

// tomlList writes ss as a TOML array of strings.
func tomlList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// vendKeys returns the key pair the catalog vends, nil if it vends none.
func vendKeys(v config.CatalogVend, cat *catalog.Catalog) *catalog.S3Keys {
	if !v.Enabled || cat == nil {
		return nil
	}
	return &catalog.S3Keys{AccessKeyID: v.AccessKeyID, SecretAccessKey: string(v.SecretAccessKey)}
}

package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/lifecycle"
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
there (how tables are named: see docs/serving.md); with server.pg_listen
set, over the PostgreSQL wire protocol (user = a token's name, password
= the token). GET /metrics, for
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
the queries; one more is answered 503 with Retry-After at once. Of the
large queries of POST /v1/query in flight, server.max_running_queries run
at once (default: as many as the cores hold at query.threads each) and the
others wait their turn; ingests never wait for a query, nor small
statements (a few market locations' rows) for large ones.

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

// serve runs the server wing's lifecycle (package lifecycle) over the
// deployment d opens: the listeners first, then the store, whose metrics
// the server exposes.
func serve(cmd *cobra.Command, d *deployment) error {
	ctx := cmd.Context()
	cfg, err := d.load()
	if err != nil {
		return err
	}
	sv, err := lifecycle.New(cfg, lifecycle.Options{Logger: logger(), Out: cmd.OutOrStdout(), AtOnce: exitAtOnce})
	if err != nil {
		return err
	}
	defer sv.Close(context.WithoutCancel(ctx))
	s, _, err := d.open(ctx, store.WithMeters(sv.Meters()))
	if err != nil {
		return err
	}
	defer s.Close()
	return sv.Run(ctx, s)
}

// exitAtOnce ends the process on a second signal, not waiting for the
// shutdown the first began.
func exitAtOnce(sig os.Signal) {
	fmt.Fprintf(os.Stderr, "meterstore: a second %v: exiting at once\n", sig)
	os.Exit(exitPermanent)
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

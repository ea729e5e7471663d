// Package flightapi is the Arrow Flight SQL service of meterstore serve:
// read-only SQL over every table's readings in both tiers, as meterstore
// query and POST /v1/query answer it, streamed as Arrow record batches.
//
// It lives beside the command rather than under the module's internal/
// because it imports the front door (store), as httpapi does.
//
// Names (names.go): catalog "meterstore"; a db_schema per MeterStore
// table, holding readings and readings_versions; db_schema "system" with
// the system tables. A statement names its table by qualifying a
// relation: SELECT ... FROM power.readings.
//
// Auth: every call carries a bearer token of the [[server.token]]
// sections in the gRPC metadata header authorization ("Bearer <token>"),
// with scope query; a token that lists tables sees and queries only
// those. No token or an unknown one is Unauthenticated, a token without
// the scope or the table PermissionDenied; each refusal is counted in
// meterstore.http.auth_failures, as the HTTP API counts its own.
//
// Statements: GetFlightInfo answers at once, without a schema; the
// statement runs in DoGet, whose stream context is the query's: a client
// that cancels or goes away cancels it. Prepared statements hold the
// statement and its table (no parameters). Writes are refused.
package flightapi

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/auth"
	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/metrics"
	"github.com/meterstore/meterstore/store"
)

// Options configure a server.
type Options struct {
	// Tokens are the bearer tokens accepted, known by their hashes.
	Tokens []config.Token
	// TLS, when not nil, is the server's TLS configuration; nil serves
	// plain gRPC.
	TLS *tls.Config
	// MaxConcurrentQueries bounds the statements streamed at once; one
	// more is refused with ResourceExhausted. Zero means no bound.
	MaxConcurrentQueries int
	// Version is the server's version in GetSqlInfo.
	Version string
	// Meters receives the count of refused calls
	// (meterstore.http.auth_failures); nil records nothing.
	Meters metric.MeterProvider
	// Logger receives queries, refusals and failures, never a token; nil
	// logs nothing.
	Logger *slog.Logger
}

// server is the Flight SQL service over one store.
type server struct {
	flightsql.BaseServer
	s       Store
	o       Options
	log     *slog.Logger
	metrics *metrics.Metrics
	slots   chan struct{} // a token per statement streamed; nil when unbounded
	prep    *preparedStatements
}

// New returns the gRPC server of the Flight SQL service over s; serve it
// with its Serve method and stop it with GracefulStop or Stop.
func New(s *store.Store, o Options) (*grpc.Server, error) {
	return newServer(frontDoor{s}, o)
}

// newServer returns the gRPC server of the Flight SQL service over s.
func newServer(s Store, o Options) (*grpc.Server, error) {
	m, err := metrics.New(o.Meters)
	if err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	srv := &server{s: s, o: o, log: log, metrics: m, prep: newPreparedStatements()}
	if n := o.MaxConcurrentQueries; n > 0 {
		srv.slots = make(chan struct{}, n)
	}
	if err := srv.registerSqlInfo(); err != nil {
		return nil, err
	}
	opts := []grpc.ServerOption{grpc.UnaryInterceptor(srv.unary), grpc.StreamInterceptor(srv.stream)}
	if o.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(o.TLS)))
	}
	g := grpc.NewServer(opts...)
	flight.RegisterFlightServiceServer(g, flightsql.NewFlightServer(srv))
	return g, nil
}

// tokenKey is the context key of the token (a config.Token) a call
// carries.
type tokenKey struct{}

// tokenOf returns the token that authorised the call of ctx.
func tokenOf(ctx context.Context) config.Token {
	t, _ := ctx.Value(tokenKey{}).(config.Token)
	return t
}

func (s *server) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
	ctx, err := s.authenticate(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	return next(ctx, req)
}

func (s *server) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, next grpc.StreamHandler) error {
	ctx, err := s.authenticate(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	return next(srv, &tokenStream{ServerStream: ss, ctx: ctx})
}

// tokenStream is a stream whose context carries its token.
type tokenStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (t *tokenStream) Context() context.Context { return t.ctx }

// authenticate admits a call whose bearer token, as auth.Match checks
// it, holds scope query, and returns its context with the token.
func (s *server) authenticate(ctx context.Context, method string) (context.Context, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	var presented string
	for _, v := range md.Get("authorization") {
		if tok, ok := auth.Bearer(v); ok {
			presented = tok
			break
		}
	}
	if presented == "" {
		return nil, s.refuse(ctx, codes.Unauthenticated, metrics.ReasonMissing, "", method,
			"a bearer token is required: gRPC metadata authorization: Bearer <token>")
	}
	t, ok := auth.Match(s.o.Tokens, presented)
	if !ok {
		return nil, s.refuse(ctx, codes.Unauthenticated, metrics.ReasonInvalid, "", method, "the bearer token is not valid")
	}
	if !auth.HasScope(t, config.ScopeQuery) {
		return nil, s.refuse(ctx, codes.PermissionDenied, metrics.ReasonForbidden, t.Name, method,
			fmt.Sprintf("token %q lacks the scope: want %s", t.Name, config.ScopeQuery))
	}
	return context.WithValue(ctx, tokenKey{}, t), nil
}

// refuse counts and logs a refused call, with the token's name when it is
// known, and returns its error.
func (s *server) refuse(ctx context.Context, code codes.Code, reason, name, method, msg string) error {
	s.metrics.AuthFailureVia(ctx, metrics.ProtocolFlightSQL, reason)
	remote := ""
	if p, ok := peer.FromContext(ctx); ok {
		remote = p.Addr.String()
	}
	// A call without a valid token may be a guess: WARN. A token that may
	// not do what it asked is the client's mistake: INFO, so that it
	// cannot fill the log.
	level := slog.LevelInfo
	if code == codes.Unauthenticated {
		level = slog.LevelWarn
	}
	s.log.LogAttrs(ctx, level, "flight sql call refused", slog.String("reason", reason),
		slog.String("token", name), slog.String("method", method), slog.String("remote", remote))
	return status.Error(code, msg)
}

// visible returns the tables the call's token may touch, in declaration
// order.
func (s *server) visible(ctx context.Context) []string {
	t := tokenOf(ctx)
	var out []string
	for _, name := range s.s.Tables() {
		if auth.MayTouch(t, name) {
			out = append(out, name)
		}
	}
	return out
}

// Package httpapi is the HTTP API of meterstore serve: the routes below,
// behind bearer tokens with scopes, over the front door (New takes a
// *store.Store; the handlers ask of it only the Store interface of
// frontdoor.go), the Iceberg REST catalog and the dashboard among them.
//
// It lives in the server wing under cmd/meterstore rather than under the
// module's internal/ because it imports the front door (store), which
// nothing in the library below it may do.
//
//	GET /healthz    no token   200 {"status":"ok"} while the process serves
//	GET /readyz     any scope  200 when PostgreSQL answers and every table is healthy, else 503
//	                (a token limited to tables: every one of its tables)
//	GET /v1/status  query, admin  the status of every table the token may touch (system.tables)
//	GET /v1/openapi.yaml  any scope  the OpenAPI document of this API (openapi.yaml)
//	GET /metrics    admin  the Prometheus exposition of the store's metrics and the server's (see metrics.go)
//	GET /           admin  the dashboard page, by session cookie or bearer (see dashboardapi.go)
//
//	POST /v1/query  query  one read-only SQL statement, its rows streamed (see query.go)
//	POST /v1/tables/{table}/readings  ingest  a CSV, JSON lines or MSCONS delivery (see ingest.go, mscons.go)
//	GET /v1/tables/{table}/series/{malo_id}/{obis_code}  query  one series' readings (see series.go)
//	/iceberg/v1/...  catalog  the Iceberg REST catalog, with its OAuth2 token endpoint (see catalogapi.go)
//
// Every error is JSON, {"error": "...", "code": "..."}, with codes
// unauthorized (401), forbidden (403), not_found (404),
// method_not_allowed (405), not_ready (503), overloaded (503) and
// internal (500).
//
// Options.MaxConcurrentRequests bounds the ingests in flight and, apart,
// the queries: one more is answered 503 overloaded with Retry-After at
// once, before its token is checked, rather than queued, so that a burst
// costs the server nothing but the refusals. Of the queries in flight,
// Options.MaxRunningQueries run their SQL at once and the others wait
// their turn: ingests never wait for queries, nor small statements, over
// a few series (store.Statement.Small), for large ones.
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/accesstoken"
	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/auth"
	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/dashboard"
	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/idempotency"
	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/metrics"
	"github.com/meterstore/meterstore/store"
)

// Options configure a Handler.
type Options struct {
	// Tokens are the bearer tokens accepted, known by their hashes.
	Tokens []config.Token
	// MaxBodyBytes bounds a request body; zero means no bound.
	MaxBodyBytes int64
	// MaxConcurrentRequests bounds the ingests served at once, and apart
	// the queries; zero means no bound.
	MaxConcurrentRequests int
	// MaxRunningQueries bounds the large statements of POST /v1/query
	// running at once; the others in flight wait their turn, holding
	// nothing but their request. Small ones (store.Statement.Small) are
	// not counted and never wait. Zero means no bound.
	MaxRunningQueries int
	// IdempotencyRetention is how long the answer to an ingest with an
	// Idempotency-Key is kept for its retries; zero means
	// DefaultIdempotencyRetention.
	IdempotencyRetention time.Duration
	// Meters receives the count of refused requests
	// (meterstore.http.auth_failures) and of every request and its
	// duration (meterstore.http.requests, meterstore.http.request.duration);
	// nil records nothing.
	Meters metric.MeterProvider
	// Metrics serves GET /metrics, scope admin: the exposition of what
	// Meters and the store record, as Prometheus returns it, limited for
	// a token limited to tables to what concerns them (Exposition.For);
	// nil answers 404.
	Metrics *Exposition
	// Logger receives refusals and failures, never a token; nil logs
	// nothing.
	Logger *slog.Logger
	// Catalog, if set, is served under /iceberg as the Iceberg REST
	// catalog, to tokens with the catalog scope (catalogapi.go).
	Catalog *catalog.Catalog
	// CatalogWritable serves the catalog's writes too.
	CatalogWritable bool
	// CatalogTokenLifetime is how long an access token of the catalog's
	// OAuth2 endpoint is accepted; zero means DefaultCatalogTokenLifetime.
	CatalogTokenLifetime time.Duration
	// CatalogName, if set, is the readings views' default catalog
	// (rest.ViewCatalog).
	CatalogName string
	// CatalogVend, if set, is the S3 key pair the catalog vends to tokens
	// with the scopes catalog and storage that ask for it
	// (catalogcreds.go); the catalog's warehouse must be on S3.
	CatalogVend *catalog.S3Keys
	// Clock is the time status is computed and access tokens expire at;
	// nil means time.Now.
	Clock func() time.Time
}

// handler serves the API over one store.
type handler struct {
	s       Store
	tokens  *accesstoken.Table // the catalog's access tokens; nil without a catalog
	records records            // of idempotent ingests
	o       Options
	log     *slog.Logger
	metrics *metrics.Metrics
	mux     *routeMux
	// batchRows is the size of an ingest's atomic batch; zero means
	// ingest.DefaultBatchRows.
	batchRows int
	// retention is Options.IdempotencyRetention or its default.
	retention time.Duration
	// pruned is when expired idempotency records were last pruned, in
	// Unix nanoseconds of o.Clock.
	pruned atomic.Int64
	// ingestSlots and querySlots hold a token per ingest and per query
	// in flight; nil when unbounded.
	ingestSlots, querySlots chan struct{}
	// running holds a place per statement of POST /v1/query running;
	// nil when unbounded.
	running gate
	// held keeps the *bufio.Writer buffers of pooledHold bytes that
	// answers held whole are written through, for the next (holdAnswer).
	held sync.Pool
	// dash serves the dashboard (dashboardapi.go); nil serves none.
	dash *dashboard.Dashboard
	// views are the views the catalog serves beside its tables; nil
	// serves none.
	views catalog.Views
}

// services are what a handler keeps beside the store: in the hot tier's
// database, the catalog's access tokens, the idempotency records and the
// dashboard's sessions; and the views the catalog serves beside its
// tables. records is required; tokens only with Options.Catalog; without
// dashboard, no dashboard is served, and without views no view.
type services struct {
	tokens    *accesstoken.Table
	records   records
	dashboard func(dashboard.Options) *dashboard.Dashboard
	views     catalog.Views
}

// routes are the paths the API serves and their methods, so that a known
// path asked with another method is told which it takes.
var routes = map[string]string{"/": "GET", dashboard.LogoutPath: "POST", "/healthz": "GET", "/readyz": "GET", "/v1/status": "GET", metricsPath: "GET", queryPath: "POST"}

// New returns the API over s.
func New(s *store.Store, o Options) (http.Handler, error) {
	db := s.ServiceDB()
	return newHandler(frontDoor{s}, services{
		tokens:    accesstoken.New(db),
		records:   pgRecords{idempotency.New(db)},
		dashboard: func(o dashboard.Options) *dashboard.Dashboard { return dashboard.New(s, o) },
		views:     s.ServedCatalog().Views,
	}, o)
}

// newHandler returns the API over s and the services sv.
func newHandler(s Store, sv services, o Options) (*handler, error) {
	m, err := metrics.New(o.Meters)
	if err != nil {
		return nil, err
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &handler{s: s, tokens: sv.tokens, records: sv.records, o: o, log: log, metrics: m,
		mux: newRouteMux(), retention: o.IdempotencyRetention, views: sv.views}
	if h.retention <= 0 {
		h.retention = DefaultIdempotencyRetention
	}
	if n := o.MaxConcurrentRequests; n > 0 {
		h.ingestSlots, h.querySlots = make(chan struct{}, n), make(chan struct{}, n)
	}
	if n := o.MaxRunningQueries; n > 0 {
		h.running = make(gate, n)
	}
	h.routeIngest() // POST /v1/tables/{table}/readings, ingest.go
	h.routeQuery()  // POST /v1/query, query.go
	h.routeSeries() // GET /v1/tables/{table}/series/{malo_id}/{obis_code}, series.go

	h.mux.HandleFunc("GET /healthz", h.healthz)
	h.mux.Handle("GET /readyz", h.guard(nil, h.readyz))
	h.mux.Handle("GET /v1/status", h.guard([]string{config.ScopeQuery, config.ScopeAdmin}, h.status))
	h.handleMetrics()
	h.routeOpenAPI() // GET /v1/openapi.yaml, openapi.go
	// /iceberg/..., catalogapi.go
	if err := h.routeCatalog(); err != nil {
		return nil, err
	}
	h.routeDashboard(sv.dashboard) // / and /dashboard/..., dashboardapi.go
	h.mux.HandleFunc("/", h.unknown)
	return h, nil
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.o.MaxBodyBytes > 0 && r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, h.o.MaxBodyBytes)
	}
	h.serveCounted(w, r, http.HandlerFunc(h.serveLimited))
}

// overloadRetryAfter is the Retry-After of a 503 overloaded, in seconds:
// a slot frees as soon as one request ends.
const overloadRetryAfter = 1

// serveLimited serves r unless it is an ingest or a query and as many of
// its kind are in flight as allowed.
func (h *handler) serveLimited(w http.ResponseWriter, r *http.Request) {
	if h.ingestSlots == nil {
		h.mux.ServeHTTP(w, r)
		return
	}
	var slots chan struct{}
	kind := ""
	_, pattern := h.mux.ServeMux.Handler(r)
	switch pattern {
	case "POST " + ingestPath:
		slots, kind = h.ingestSlots, "ingests"
	case "POST " + queryPath, "GET " + seriesPath:
		slots, kind = h.querySlots, "queries"
	default:
		h.mux.ServeHTTP(w, r)
		return
	}
	select {
	case slots <- struct{}{}:
		defer func() { <-slots }()
		h.mux.ServeHTTP(w, r)
	default:
		r.Pattern = pattern // counted under its route
		w.Header().Set("Retry-After", strconv.Itoa(overloadRetryAfter))
		writeError(w, http.StatusServiceUnavailable, "overloaded",
			fmt.Sprintf("%d %s are in flight, as many as server.max_concurrent_requests allows: retry shortly", cap(slots), kind))
	}
}

// tokenKey is the context key of the token (a config.Token) a request
// carries.
type tokenKey struct{}

// guard admits a request whose bearer token holds one of scopes (any
// scope when scopes is empty), as auth.Match checks it.
func (h *handler) guard(scopes []string, next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		presented, ok := bearer(r)
		if !ok {
			h.refuse(w, r, http.StatusUnauthorized, metrics.ReasonMissing, "", "a bearer token is required: Authorization: Bearer <token>")
			return
		}
		t, ok := auth.Match(h.o.Tokens, presented)
		if !ok {
			h.refuse(w, r, http.StatusUnauthorized, metrics.ReasonInvalid, "", "the bearer token is not valid")
			return
		}
		if !auth.HasScope(t, scopes...) {
			h.refuse(w, r, http.StatusForbidden, metrics.ReasonForbidden, t.Name,
				fmt.Sprintf("token %q lacks the scope: want %s", t.Name, strings.Join(scopes, " or ")))
			return
		}
		next(w, r.WithContext(context.WithValue(r.Context(), tokenKey{}, t)))
	})
}

// bearer returns the token of the request's Authorization header.
func bearer(r *http.Request) (string, bool) {
	return auth.Bearer(r.Header.Get("Authorization"))
}

// refuse answers a request the guard turned away, counts it and logs it
// with the token's name when it is known; the token itself is never
// logged.
func (h *handler) refuse(w http.ResponseWriter, r *http.Request, status int, reason, name, msg string) {
	h.metrics.AuthFailure(r.Context(), reason)
	h.log.LogAttrs(r.Context(), refusalLevel(status), "request refused", slog.String("reason", reason),
		slog.String("token", name), slog.String("method", r.Method), slog.String("path", r.URL.Path),
		slog.String("remote", r.RemoteAddr))
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="meterstore"`)
	}
	code := "unauthorized"
	if status == http.StatusForbidden {
		code = "forbidden"
	}
	writeError(w, status, code, msg)
}

// touch returns the declaration of table name for a request of token tok,
// or answers the request, 403 when tok may not touch the table and 404
// when no such table is declared, and returns false: the preamble of every
// route that names a table.
func (h *handler) touch(w http.ResponseWriter, r *http.Request, tok config.Token, name string) (store.Table, bool) {
	if !auth.MayTouch(tok, name) {
		h.refuse(w, r, http.StatusForbidden, metrics.ReasonForbidden, tok.Name,
			fmt.Sprintf("token %q may not touch table %q", tok.Name, name))
		return store.Table{}, false
	}
	decl, err := h.s.Declaration(name)
	if errors.Is(err, store.ErrNoTable) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no such table: %q", name))
		return store.Table{}, false
	} else if err != nil {
		h.internal(w, r, err)
		return store.Table{}, false
	}
	return decl, true
}

// refusalLevel is the level a refusal is logged at: WARN for a request
// without a valid token, which may be a guess; INFO for a token that may
// not do what it asked, which is the client's mistake and must not let
// it fill the log.
func refusalLevel(status int) slog.Level {
	if status == http.StatusUnauthorized {
		return slog.LevelWarn
	}
	return slog.LevelInfo
}

func (h *handler) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 when PostgreSQL answers and every table's status
// could be computed and is healthy; else 503, naming the tables that are
// not. A token limited to tables is answered for its tables alone: another
// table's health is neither named nor counted, so that the answer is the
// same whatever the other tables hold. PostgreSQL is every table's.
func (h *handler) readyz(w http.ResponseWriter, r *http.Request) {
	if err := h.s.Ping(r.Context()); err != nil {
		h.log.Warn("not ready", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, notReady{Error: "PostgreSQL does not answer", Code: "not_ready"})
		return
	}
	tok, _ := r.Context().Value(tokenKey{}).(config.Token)
	var bad []string
	for _, st := range h.s.Status(r.Context(), h.o.Clock()) {
		if !st.Healthy && auth.MayTouch(tok, st.Table) {
			bad = append(bad, st.Table)
		}
	}
	if len(bad) > 0 {
		writeJSON(w, http.StatusServiceUnavailable, notReady{
			Error: "unhealthy tables: " + strings.Join(bad, ", "), Code: "not_ready", Tables: bad,
		})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// notReady is the body of a 503 from readyz.
type notReady struct {
	Error  string   `json:"error"`
	Code   string   `json:"code"`
	Tables []string `json:"unhealthy_tables,omitempty"`
}

func (h *handler) status(w http.ResponseWriter, r *http.Request) {
	now := h.o.Clock().UTC()
	tok, _ := r.Context().Value(tokenKey{}).(config.Token)
	// A table-limited token sees its own tables alone.
	mayTouch := func(table string) bool { return auth.MayTouch(tok, table) }
	writeJSON(w, http.StatusOK, NewStatusBody(now, h.s.Status(r.Context(), now), mayTouch))
}

// unknown answers every request no route took: 405 for a known path
// asked with another method, else 404.
func (h *handler) unknown(w http.ResponseWriter, r *http.Request) {
	if h.dash != nil && servesDashboard(r) {
		h.dash.Page(w, r)
		return
	}
	if method, ok := routes[r.URL.Path]; ok {
		w.Header().Set("Allow", method)
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("%s takes %s, not %s", r.URL.Path, method, r.Method))
		return
	}
	writeError(w, http.StatusNotFound, "not_found", "no such endpoint: "+r.URL.Path)
}

// apiError is the body of every error.
type apiError struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, apiError{Error: msg, Code: code})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v) // the status is sent; a failed write has no one to tell
}

package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/consensus"
)

// Handler serves the catalog over the Iceberg REST catalog protocol,
// read-only: configuration, namespaces, table listing and loading, and
// the views WithViews provides, if any. Every
// mutating route answers 405, and GET /v1/config advertises only the read
// endpoints, so that clients which negotiate endpoints do not even try.
//
// Read-only is the default because a REST endpoint is typically exposed to
// readers (query engines, notebooks, BI tools) that should find the tables
// but never change them: a write through REST is as authoritative as one
// from the store itself, and a reader's DROP TABLE or a stray commit would
// reach the archive. Serve writes with WritableHandler, and only to the
// clients that are meant to write.
//
// Config is merged into the response of GET /v1/config and into each
// loaded table's config, for example the S3 endpoint readers should use;
// properties that hold credentials are never served, from config or the
// warehouse; only a LoadTableResult carries credentials, those its
// request's context holds (catalog.WithStorageCredentials). Every error, on any path, is the protocol's ErrorModel in
// JSON: what does not exist is 404 (NoSuchTableException,
// NoSuchNamespaceException, or NotFoundException for a route not served).
// The metadata served carries gc.enabled=false (see writeTable).
//
// The handler does not authenticate: mount it behind something that does,
// as meterstore serve does.
func Handler(c Catalog, config map[string]string, opts ...Option) http.Handler {
	return handler(c, config, false, opts)
}

// WritableHandler serves what Handler serves and the writes of the Iceberg
// REST catalog protocol as well. Every write calls the same method of c that
// an in-process caller would, so it goes through the log's compare-and-set
// and, for metadata commits, through the CommitCheck (for example the
// watermark check that keeps W from moving backwards):
//
//	POST   /v1/namespaces                          create a namespace
//	DELETE /v1/namespaces/{ns}                     drop an empty namespace
//	POST   /v1/namespaces/{ns}/properties          update namespace properties
//	POST   /v1/namespaces/{ns}/tables              create a table (not staged)
//	POST   /v1/namespaces/{ns}/tables/{table}      commit requirements + updates
//	DELETE /v1/namespaces/{ns}/tables/{table}      drop a table (not purge)
//
// The views stay read-only: a write on a view's routes answers 405.
//
// Rename, multi-table transactions, table registration and staged creates
// answer 501: a table's history is a log shard named after the table, and
// tables do not share a log entry. A drop with purgeRequested=true is refused
// with 501 and changes nothing: the files of a dropped table stay, and
// deleting readings is the store's purge, not a side effect of a drop.
//
// Errors are the protocol's ErrorModel. A commit whose requirements fail, that
// lost the compare-and-set to another commit, or that the CommitCheck refused
// answers 409 CommitFailedException: nothing was written, and clients refresh
// and retry (a refused commit is refused again). One whose updates cannot
// be applied, or would move the table to a location outside the warehouse
// or one no object key can name, answers 400 BadRequestException. Every
// refusal is a 4xx (or 501 for what is not offered), because Iceberg's
// clients take a 5xx on a commit for an unknown outcome: a commit whose
// outcome the log could not settle answers 500 CommitStateUnknownException,
// never a clean failure, so that the client keeps what the commit may
// reference.
//
// A write runs to its end even if the client disconnects, so that a dropped
// connection cannot cut a commit short halfway; it is bounded by a timeout.
func WritableHandler(c Catalog, config map[string]string, opts ...Option) http.Handler {
	return handler(c, config, true, opts)
}

// An Option sets how Handler and WritableHandler serve.
type Option func(*restServer)

// ViewCatalog names the catalog, as the engines that read the views call
// it, as each view's default catalog (default-catalog of view
// spec v1). Trino analyses a view only under a default catalog, and
// resolves the view's namespace-qualified names in it, so its catalog
// file must be called name; Spark uses the default catalog instead of its
// own name for the catalog, so a Spark catalog must be called name too.
// Without it (or with ""), views carry no default catalog: Spark and
// PyIceberg read them under whatever name they give the catalog, and
// Trino refuses them.
func ViewCatalog(name string) Option {
	return func(s *restServer) { s.viewCatalog = name }
}

// WithViews serves the views v provides beside the tables. Without it the
// handler serves no views: a listing is empty and every view is missing.
func WithViews(v catalog.Views) Option {
	return func(s *restServer) { s.views = v }
}

// WithLogger sends the warnings about failed requests (a server-side
// failure, a view left out of a listing) to l; without it they are
// discarded.
func WithLogger(l *slog.Logger) Option {
	return func(s *restServer) { s.logger = l }
}

const (
	// restWriteTimeout bounds a write served over REST, which is detached
	// from the request's context.
	restWriteTimeout = 5 * time.Minute
	// restMaxBody bounds a request body.
	restMaxBody = 16 << 20
)

// readEndpoints and writeEndpoints are advertised in GET /v1/config, in
// the protocol's "METHOD /v1/{prefix}/..." form.
var (
	readEndpoints = []string{
		"GET /v1/{prefix}/namespaces",
		"GET /v1/{prefix}/namespaces/{namespace}",
		"HEAD /v1/{prefix}/namespaces/{namespace}",
		"GET /v1/{prefix}/namespaces/{namespace}/tables",
		"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
		"HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
		"GET /v1/{prefix}/namespaces/{namespace}/views",
		"GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
		"HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
	}
	writeEndpoints = []string{
		"POST /v1/{prefix}/namespaces",
		"DELETE /v1/{prefix}/namespaces/{namespace}",
		"POST /v1/{prefix}/namespaces/{namespace}/properties",
		"POST /v1/{prefix}/namespaces/{namespace}/tables",
		"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
		"DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	}
)

// restServer holds what the routes share.
type restServer struct {
	c           Catalog
	config      map[string]string
	viewCatalog string        // the views' default catalog; "": none
	views       catalog.Views // nil: no views
	logger      *slog.Logger  // warnings about failed requests
}

// routeKind decides how an error maps to a status: the protocol gives a
// table commit's 409 and 5xx meanings that other routes do not have.
type routeKind int

const (
	readRoute      routeKind = iota // a read of namespaces
	tableReadRoute                  // a read of one table: GET or HEAD /v1/namespaces/{ns}/tables/{table}
	commitRoute                     // POST /v1/namespaces/{ns}/tables/{table}
	writeRoute                      // every other write
)

func handler(c Catalog, config map[string]string, writable bool, opts []Option) http.Handler {
	if config == nil {
		config = map[string]string{}
	}
	s := &restServer{c: c, config: config, logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(s)
	}
	type route struct {
		method, path string
		write        bool
		h            http.HandlerFunc
	}
	routes := []route{
		{"GET", "/v1/config", false, s.getConfig(writable)},
		{"GET", "/v1/namespaces", false, s.listNamespaces},
		{"GET", "/v1/namespaces/{ns}", false, s.loadNamespace},
		{"HEAD", "/v1/namespaces/{ns}", false, s.namespaceExists},
		{"GET", "/v1/namespaces/{ns}/tables", false, s.listTables},
		{"GET", "/v1/namespaces/{ns}/tables/{table}", false, s.loadTable},
		{"HEAD", "/v1/namespaces/{ns}/tables/{table}", false, s.tableExists},
		{"GET", "/v1/namespaces/{ns}/views", false, s.listViews},
		{"GET", "/v1/namespaces/{ns}/views/{view}", false, s.getView},
		{"HEAD", "/v1/namespaces/{ns}/views/{view}", false, s.viewExists},

		{"POST", "/v1/namespaces", true, s.createNamespace},
		{"DELETE", "/v1/namespaces/{ns}", true, s.dropNamespace},
		{"POST", "/v1/namespaces/{ns}/properties", true, s.updateNamespace},
		{"POST", "/v1/namespaces/{ns}/tables", true, s.createTable},
		{"POST", "/v1/namespaces/{ns}/tables/{table}", true, s.commitTable},
		{"DELETE", "/v1/namespaces/{ns}/tables/{table}", true, s.dropTable},
		{"POST", "/v1/tables/rename", true, s.renameTable},
		{"POST", "/v1/namespaces/{ns}/register", true, notImplemented(
			"registering a table is not supported: a table's history is its log, which a metadata file alone does not give")},
		{"POST", "/v1/transactions/commit", true, notImplemented(
			"multi-table transactions are not supported: each table commits on a log of its own")},
	}
	mux := http.NewServeMux()
	allowed := map[string][]string{} // path -> the methods it serves
	var paths []string
	for _, rt := range routes {
		if !slices.Contains(paths, rt.path) {
			paths = append(paths, rt.path)
		}
		if rt.write && !writable {
			continue
		}
		mux.HandleFunc(rt.method+" "+rt.path, rt.h)
		methods := []string{rt.method}
		if rt.method == "GET" {
			methods = append(methods, "HEAD") // ServeMux serves HEAD with GET
		}
		for _, m := range methods {
			if !slices.Contains(allowed[rt.path], m) {
				allowed[rt.path] = append(allowed[rt.path], m)
			}
		}
	}
	// The other mutating methods answer with an ErrorModel too: 405 on a
	// known path, and on other paths 405 when read-only, else 501.
	for _, p := range paths {
		for _, m := range []string{"POST", "PUT", "DELETE", "PATCH"} {
			if slices.Contains(allowed[p], m) {
				continue
			}
			if !writable {
				mux.HandleFunc(m+" "+p, refuseWrite)
			} else {
				mux.HandleFunc(m+" "+p, notAllowed(allowed[p]))
			}
		}
	}
	// Every other request, on any path, gets an ErrorModel as well: a
	// read of a route not served is 404, so that a client probing a route
	// it was not offered (GET /v1/config lists those it is) finds nothing
	// rather than a plain-text page it cannot parse.
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet || r.Method == http.MethodHead:
			writeJSON(w, http.StatusNotFound, errorBody("no such route: "+r.Method+" "+r.URL.Path+
				"; GET /v1/config lists the endpoints served", "NotFoundException", http.StatusNotFound))
		case writable:
			notImplemented("not served by this catalog: "+r.Method+" "+r.URL.Path)(w, r)
		default:
			refuseWrite(w, r)
		}
	})
	return mux
}

func (s *restServer) getConfig(writable bool) http.HandlerFunc {
	endpoints := slices.Clone(readEndpoints)
	if writable {
		endpoints = append(endpoints, writeEndpoints...)
	}
	return func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{
			"defaults":  storageDefaults(s.c.Warehouse().Props), // never a vended credential
			"overrides": withoutSecrets(s.config),
			"endpoints": endpoints,
		})
	}
}

func (s *restServer) listNamespaces(w http.ResponseWriter, r *http.Request) {
	var parent table.Identifier
	if p := r.URL.Query().Get("parent"); p != "" {
		parent = strings.Split(p, "\x1f")
	}
	nss, err := s.c.ListNamespaces(r.Context(), parent)
	if err != nil {
		s.fail(w, r, err, readRoute)
		return
	}
	if nss == nil {
		nss = []table.Identifier{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"namespaces": nss})
}

func (s *restServer) loadNamespace(w http.ResponseWriter, r *http.Request) {
	ns := namespaceOf(r)
	props, err := s.c.LoadNamespaceProperties(r.Context(), ns)
	if err != nil {
		s.fail(w, r, err, readRoute)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"namespace": ns, "properties": props})
}

func (s *restServer) namespaceExists(w http.ResponseWriter, r *http.Request) {
	ok, err := s.c.CheckNamespaceExists(r.Context(), namespaceOf(r))
	writeStatus(w, ok, err, readRoute)
}

func (s *restServer) listTables(w http.ResponseWriter, r *http.Request) {
	s.list(w, r, func(id table.Identifier) (table.Identifier, bool) { return id, true })
}

// list answers the protocol's ListTablesResponse with what entry makes of
// each table of the namespace: the table itself, or its view, or nothing
// (false).
func (s *restServer) list(w http.ResponseWriter, r *http.Request, entry func(table.Identifier) (table.Identifier, bool)) {
	type ident struct {
		Namespace []string `json:"namespace"`
		Name      string   `json:"name"`
	}
	ids := []ident{}
	for id, err := range s.c.ListTables(r.Context(), namespaceOf(r)) {
		if err != nil {
			s.fail(w, r, err, readRoute)
			return
		}
		if id, ok := entry(id); ok {
			ids = append(ids, ident{Namespace: id[:1], Name: id[1]})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"identifiers": ids})
}

func (s *restServer) loadTable(w http.ResponseWriter, r *http.Request) {
	t, err := s.c.LoadTable(r.Context(), tableOf(r))
	if err != nil {
		s.fail(w, r, err, tableReadRoute)
		return
	}
	s.writeTable(w, r, t.MetadataLocation(), t.Metadata())
}

func (s *restServer) tableExists(w http.ResponseWriter, r *http.Request) {
	ok, err := s.c.CheckTableExists(r.Context(), tableOf(r))
	writeStatus(w, ok, err, tableReadRoute)
}

// writeTable answers with the protocol's LoadTableResult.
//
// The metadata served carries gc.enabled=false, whatever the table's file
// says: the store expires snapshots and purges readings itself, and a
// client that garbage-collects files of a table it reads through this
// catalog (Spark's DROP TABLE ... PURGE deletes the files itself after a
// plain drop, expire_snapshots and remove_orphan_files likewise) would
// delete files the store's log still references. Iceberg's engines check
// gc.enabled before any of these and refuse.
func (s *restServer) writeTable(w http.ResponseWriter, r *http.Request, loc string, md table.Metadata) {
	served, err := withoutGC(md)
	if err != nil {
		s.fail(w, r, err, readRoute)
		return
	}
	body := map[string]any{
		"metadata-location": loc,
		"metadata":          served,
		"config":            s.tableConfig(),
	}
	addStorageCredentials(r.Context(), body, loc) // credentials.go
	writeJSON(w, http.StatusOK, body)
}

// gcEnabled is the table property Iceberg's engines check before they
// delete a table's files.
const gcEnabled = "gc.enabled"

// withoutGC returns the JSON of md with gc.enabled=false among its
// properties. The other fields stay as encoded, so that 64-bit snapshot
// IDs keep every digit.
func withoutGC(md table.Metadata) (json.RawMessage, error) {
	raw, err := json.Marshal(md)
	if err != nil {
		return nil, fmt.Errorf("catalog: encode metadata: %w", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("catalog: encode metadata: %w", err)
	}
	props := map[string]string{}
	if p, ok := fields["properties"]; ok && string(p) != "null" {
		if err := json.Unmarshal(p, &props); err != nil {
			return nil, fmt.Errorf("catalog: encode metadata properties: %w", err)
		}
	}
	props[gcEnabled] = "false"
	if fields["properties"], err = json.Marshal(props); err != nil {
		return nil, fmt.Errorf("catalog: encode metadata properties: %w", err)
	}
	return json.Marshal(fields)
}

// tableConfig is the config of a LoadTableResult: what a reader needs to
// open the table's files (the warehouse's endpoint, region and addressing
// style) and the handler's config. Long-lived credentials are never in it
// (see secretKey), unless the request's context carries storage
// credentials (WithStorageCredentials): a reader brings its own, or its
// object store grants them.
func (s *restServer) tableConfig() map[string]string {
	cfg := storageDefaults(s.c.Warehouse().Props)
	for k, v := range s.config {
		cfg[k] = v
	}
	return withoutSecrets(cfg)
}

func (s *restServer) createNamespace(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Namespace  table.Identifier   `json:"namespace"`
		Properties iceberg.Properties `json:"properties"`
	}
	if err := decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err, writeRoute)
		return
	}
	ctx, cancel := writeContext(r)
	defer cancel()
	if err := s.c.CreateNamespace(ctx, req.Namespace, req.Properties); err != nil {
		s.fail(w, r, err, writeRoute)
		return
	}
	if req.Properties == nil {
		req.Properties = iceberg.Properties{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"namespace": req.Namespace, "properties": req.Properties})
}

func (s *restServer) dropNamespace(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := writeContext(r)
	defer cancel()
	if err := s.c.DropNamespace(ctx, namespaceOf(r)); err != nil {
		s.fail(w, r, err, writeRoute)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *restServer) updateNamespace(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Removals []string           `json:"removals"`
		Updates  iceberg.Properties `json:"updates"`
	}
	if err := decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err, writeRoute)
		return
	}
	for _, k := range req.Removals {
		if _, ok := req.Updates[k]; ok {
			writeJSON(w, http.StatusUnprocessableEntity, errorBody(
				fmt.Sprintf("property %q is both removed and updated", k), "UnprocessableEntityException", http.StatusUnprocessableEntity))
			return
		}
	}
	ctx, cancel := writeContext(r)
	defer cancel()
	sum, err := s.c.UpdateNamespaceProperties(ctx, namespaceOf(r), req.Removals, req.Updates)
	if err != nil {
		s.fail(w, r, err, writeRoute)
		return
	}
	writeJSON(w, http.StatusOK, sum)
}

func (s *restServer) createTable(w http.ResponseWriter, r *http.Request) {
	// Spec and order arrive with source IDs of the request's schema, which
	// need not be the table's: table.NewMetadata binds them by name.
	var req struct {
		Name          string                        `json:"name"`
		Schema        *iceberg.Schema               `json:"schema"`
		Location      string                        `json:"location"`
		PartitionSpec *iceberg.UnboundPartitionSpec `json:"partition-spec"`
		WriteOrder    *table.UnboundSortOrder       `json:"write-order"`
		StageCreate   bool                          `json:"stage-create"`
		Properties    iceberg.Properties            `json:"properties"`
	}
	if err := decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err, writeRoute)
		return
	}
	if req.StageCreate {
		notImplemented("stage-create is not supported: create the table directly (stage-create=false)")(w, r)
		return
	}
	if req.Schema == nil {
		s.fail(w, r, badRequest{errors.New("catalog: create table: the request has no schema")}, writeRoute)
		return
	}
	opts := []icecatalog.CreateTableOpt{icecatalog.WithProperties(req.Properties)}
	if req.Location != "" {
		loc := strings.TrimRight(req.Location, "/")
		if _, err := s.c.Warehouse().Key(loc + "/metadata"); err != nil {
			s.fail(w, r, badRequest{err}, writeRoute)
			return
		}
		opts = append(opts, icecatalog.WithLocation(loc))
	}
	if req.PartitionSpec != nil {
		opts = append(opts, icecatalog.WithPartitionSpec(&req.PartitionSpec.PartitionSpec))
	}
	if req.WriteOrder != nil {
		opts = append(opts, icecatalog.WithSortOrder(req.WriteOrder.SortOrder))
	}
	ctx, cancel := writeContext(r)
	defer cancel()
	t, err := s.c.CreateTable(ctx, append(namespaceOf(r), req.Name), req.Schema, opts...)
	if err != nil {
		s.fail(w, r, err, writeRoute)
		return
	}
	s.writeTable(w, r, t.MetadataLocation(), t.Metadata())
}

func (s *restServer) commitTable(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Identifier *struct {
			Namespace []string `json:"namespace"`
			Name      string   `json:"name"`
		} `json:"identifier"`
		Requirements table.Requirements `json:"requirements"`
		Updates      table.Updates      `json:"updates"`
	}
	if err := decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err, commitRoute)
		return
	}
	ident := tableOf(r)
	if req.Identifier != nil {
		if body := append(slices.Clone(req.Identifier.Namespace), req.Identifier.Name); !slices.Equal(body, ident) {
			s.fail(w, r, badRequest{fmt.Errorf("catalog: commit: the body names table %q, the path %q",
				strings.Join(body, "."), strings.Join(ident, "."))}, commitRoute)
			return
		}
	}
	ctx, cancel := writeContext(r)
	defer cancel()
	// Only a commit that asserts creation may find no table; any other
	// answers 404 as the protocol says, rather than being applied to an
	// empty table.
	creates := slices.ContainsFunc(req.Requirements, func(q table.Requirement) bool {
		return q.GetType() == table.AssertCreate().GetType()
	})
	if !creates {
		if err := s.requireTable(ctx, ident); err != nil {
			s.fail(w, r, err, commitRoute)
			return
		}
	}
	md, loc, err := s.c.CommitTable(ctx, ident, req.Requirements, req.Updates)
	if err != nil {
		s.fail(w, r, err, commitRoute)
		return
	}
	s.writeTable(w, r, loc, md)
}

// requireTable returns an error matching ErrNoSuchTable if table ident
// does not exist.
func (s *restServer) requireTable(ctx context.Context, ident table.Identifier) error {
	ok, err := s.c.CheckTableExists(ctx, ident)
	if err == nil && !ok {
		err = fmt.Errorf("%w: %s", icecatalog.ErrNoSuchTable, strings.Join(ident, "."))
	}
	return err
}

func (s *restServer) dropTable(w http.ResponseWriter, r *http.Request) {
	if strings.EqualFold(r.URL.Query().Get("purgeRequested"), "true") {
		notImplemented("purgeRequested is not supported: nothing was dropped; drop without purge (the files stay) "+
			"and delete readings with the store's purge")(w, r)
		return
	}
	ctx, cancel := writeContext(r)
	defer cancel()
	if err := s.c.DropTable(ctx, tableOf(r)); err != nil {
		s.fail(w, r, err, writeRoute)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *restServer) renameTable(w http.ResponseWriter, r *http.Request) {
	type ident struct {
		Namespace []string `json:"namespace"`
		Name      string   `json:"name"`
	}
	var req struct {
		Source      ident `json:"source"`
		Destination ident `json:"destination"`
	}
	if err := decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err, writeRoute)
		return
	}
	ctx, cancel := writeContext(r)
	defer cancel()
	from := append(slices.Clone(req.Source.Namespace), req.Source.Name)
	to := append(slices.Clone(req.Destination.Namespace), req.Destination.Name)
	if _, err := s.c.RenameTable(ctx, from, to); err != nil {
		s.fail(w, r, err, writeRoute)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// fail answers err as an ErrorModel and logs the server-side failures.
func (s *restServer) fail(w http.ResponseWriter, r *http.Request, err error, kind routeKind) {
	code, typ := errStatus(err, kind)
	if code >= 500 {
		s.logger.Warn("catalog: REST request failed", "method", r.Method, "path", r.URL.Path, "status", code, "err", err)
	}
	writeJSON(w, code, errorBody(err.Error(), typ, code))
}

// errStatus maps an error of the catalog to the status and ErrorModel type
// of the REST protocol, as iceberg-go's and the Java REST clients read them:
//
//	404 NoSuchTable/NoSuchNamespaceException  the table or namespace does not exist
//	400 BadRequestException                   an invalid identifier, body, schema, spec or update,
//	                                          a location outside the warehouse
//	409 AlreadyExistsException                creating what exists
//	409 NamespaceNotEmptyException            dropping a namespace with tables
//	409 CommitFailedException                 a commit that did not land and may be retried:
//	                                          a failed requirement, a lost compare-and-set,
//	                                          a retryable log failure, a CommitCheck refusal
//	500 CommitStateUnknownException           a write whose outcome the log could not settle
//	501 NotImplementedException               what this catalog does not offer
//	500 ServiceFailureException               anything else
//
// A refusal outside a table commit (a check refusing a create) is a 400,
// since a 409 there means that the table exists.
//
// A read answers 404 for an identifier this catalog cannot hold (a
// namespace of two levels, a name with a dot) rather than 400: no such
// table or namespace exists, and clients rely on the 404. A read of one
// table answers NoSuchTableException even when its namespace does not
// exist, because that is the error on which the Java client and Spark
// fall back to a metadata table: cat.ns.table.snapshots is first loaded
// as table "snapshots" of namespace ns.table.
func errStatus(err error, kind routeKind) (int, string) {
	var bad badRequest
	missing := errors.Is(err, icecatalog.ErrNoSuchTable) || errors.Is(err, icecatalog.ErrNoSuchNamespace) ||
		errors.Is(err, icecatalog.ErrInvalidIdentifier)
	switch {
	case kind == tableReadRoute && missing:
		return http.StatusNotFound, "NoSuchTableException"
	case kind == readRoute && missing:
		return http.StatusNotFound, "NoSuchNamespaceException"
	case kind != readRoute && consensus.IsIndeterminate(err):
		return http.StatusInternalServerError, "CommitStateUnknownException"
	case catalog.IsRefused(err) && kind == commitRoute:
		return http.StatusConflict, "CommitFailedException"
	case catalog.IsRefused(err):
		return http.StatusBadRequest, "BadRequestException"
	case errors.Is(err, icecatalog.ErrNoSuchTable):
		return http.StatusNotFound, "NoSuchTableException"
	case errors.Is(err, icecatalog.ErrNoSuchNamespace):
		return http.StatusNotFound, "NoSuchNamespaceException"
	case errors.Is(err, icecatalog.ErrInvalidIdentifier), errors.As(err, &bad), catalog.IsBadRequest(err):
		return http.StatusBadRequest, "BadRequestException"
	case errors.Is(err, icecatalog.ErrTableAlreadyExists), errors.Is(err, icecatalog.ErrNamespaceAlreadyExists):
		return http.StatusConflict, "AlreadyExistsException"
	case errors.Is(err, icecatalog.ErrNamespaceNotEmpty):
		return http.StatusConflict, "NamespaceNotEmptyException"
	case errors.Is(err, table.ErrCommitFailed):
		return http.StatusConflict, "CommitFailedException"
	case errors.Is(err, catalog.ErrUnsupported):
		return http.StatusNotImplemented, "NotImplementedException"
	}
	return http.StatusInternalServerError, "ServiceFailureException"
}

// badRequest marks a request the handler cannot read (a body that does not
// decode, a create without a schema): 400, the message unchanged.
type badRequest struct{ error }

func (e badRequest) Unwrap() error { return e.error }

func refuseWrite(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Allow", "GET, HEAD")
	writeJSON(w, http.StatusMethodNotAllowed, errorBody("read-only catalog: this endpoint serves no writes",
		"MethodNotAllowedException", http.StatusMethodNotAllowed))
}

func notAllowed(methods []string) http.HandlerFunc {
	allow := strings.Join(methods, ", ")
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeJSON(w, http.StatusMethodNotAllowed, errorBody(fmt.Sprintf("%s is not allowed here; allowed: %s", r.Method, allow),
			"MethodNotAllowedException", http.StatusMethodNotAllowed))
	}
}

func notImplemented(msg string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotImplemented, errorBody(msg, "NotImplementedException", http.StatusNotImplemented))
	}
}

// writeContext detaches a write from the request, so that a client that
// goes away cannot cut a commit short, and bounds it.
func writeContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(r.Context()), restWriteTimeout)
}

func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, restMaxBody)).Decode(v); err != nil {
		return badRequest{fmt.Errorf("catalog: request body: %w", err)}
	}
	return nil
}

// namespaceOf decodes a namespace path segment; levels are separated by
// the unit separator, which validation then refuses.
func namespaceOf(r *http.Request) table.Identifier {
	return strings.Split(r.PathValue("ns"), "\x1f")
}

func tableOf(r *http.Request) table.Identifier {
	return append(namespaceOf(r), r.PathValue("table"))
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func writeStatus(w http.ResponseWriter, ok bool, err error, kind routeKind) {
	switch {
	case err != nil:
		code, _ := errStatus(err, kind)
		w.WriteHeader(code)
	case ok:
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func errorBody(msg, typ string, code int) map[string]any {
	return map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": code}}
}

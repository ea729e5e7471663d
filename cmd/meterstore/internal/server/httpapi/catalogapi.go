package httpapi

// The Iceberg REST catalog under /iceberg: package rest's handler
// (rest.Handler, or WritableHandler with server.catalog_writable) with the
// readings views the store hands out (store.ServedCatalog), behind the
// server's tokens. A client sets uri = <base>/iceberg.
//
//	POST /iceberg/v1/oauth/tokens  no bearer  OAuth2 client credentials: a token's name and text for an access token
//	/iceberg/v1/...                catalog    the protocol's routes, as GET /iceberg/v1/config lists them
//
// Every catalog route takes a bearer token with the catalog scope: one of
// [[server.token]], or an access token the OAuth2 endpoint issued to one.
// The scope query is not enough, although it reads the same readings: the
// catalog hands out file locations and the warehouse's storage
// properties, which a query token never needs. A token limited to tables
// sees only those tables and their readings views, and cannot write
// through the catalog. Errors are the protocol's ErrorModel, {"error":
// {"message", "type", "code"}}, and those of the OAuth2 endpoint RFC
// 6749's, {"error", "error_description"}.

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"time"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/catalog/rest"
	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/accesstoken"
	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/auth"
	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/metrics"
)

// The catalog's routes on the API's mux.
const (
	catalogPrefix     = "/iceberg"
	catalogConfigPath = catalogPrefix + "/v1/config"
	oauthTokensPath   = catalogPrefix + "/v1/oauth/tokens"
)

// DefaultCatalogTokenLifetime is how long an access token of the OAuth2
// endpoint is accepted when Options.CatalogTokenLifetime is zero.
const DefaultCatalogTokenLifetime = time.Hour

// oauthMaxBody bounds the form of a token request.
const oauthMaxBody = 64 << 10

// catalogAPI serves the catalog behind the server's tokens.
type catalogAPI struct {
	h        *handler
	inner    http.Handler // the catalog's handler, at /v1/...
	writable bool
	lifetime time.Duration
	vend     *catalog.StorageCredential // nil: none (catalogcreds.go)
}

// routeCatalog mounts the catalog of h.o.Catalog under /iceberg; without
// one it mounts nothing, and /iceberg is as unknown as any other path.
func (h *handler) routeCatalog() error {
	if h.o.Catalog == nil {
		return nil
	}
	if h.tokens == nil {
		return errors.New("httpapi: a catalog is served with a table of access tokens")
	}
	c := &catalogAPI{h: h, writable: h.o.CatalogWritable, lifetime: h.o.CatalogTokenLifetime}
	var err error
	if c.vend, err = vendCredential(h.o); err != nil {
		return err
	}
	if c.lifetime <= 0 {
		c.lifetime = DefaultCatalogTokenLifetime
	}
	// The readings views are the store's: the handler serves them
	// through its hook and knows nothing of them.
	opts := []rest.Option{rest.WithViews(h.views), rest.WithLogger(h.log)}
	if h.o.CatalogName != "" {
		opts = append(opts, rest.ViewCatalog(h.o.CatalogName))
	}
	if c.writable {
		c.inner = rest.WritableHandler(h.o.Catalog, nil, opts...)
	} else {
		c.inner = rest.Handler(h.o.Catalog, nil, opts...)
	}
	h.mux.HandleFunc("POST "+oauthTokensPath, c.tokens)
	h.mux.HandleFunc("GET "+catalogConfigPath, c.serve)
	h.mux.HandleFunc(catalogPrefix+"/", c.serve)
	return nil
}

// catalogError answers with the protocol's ErrorModel.
func catalogError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": status}})
}

// serve authenticates the request, holds a token limited to tables to
// them, and hands it to the catalog's handler with the prefix cut.
func (c *catalogAPI) serve(w http.ResponseWriter, r *http.Request) {
	t, ok := c.authenticate(w, r)
	if !ok {
		return
	}
	path := strings.TrimPrefix(r.URL.Path, catalogPrefix)
	r2 := r.Clone(context.WithValue(r.Context(), tokenKey{}, t))
	r2.URL.Path, r2.URL.RawPath = path, strings.TrimPrefix(r.URL.RawPath, catalogPrefix)
	r2 = c.withCredentials(r2, t)
	if len(t.Tables) == 0 {
		c.inner.ServeHTTP(w, r2)
		return
	}
	// A token limited to tables reads those tables and no others, and
	// writes nothing: a namespace or a new table is no table of its.
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		c.h.refuseCatalog(w, r, http.StatusForbidden, metrics.ReasonForbidden, t.Name,
			fmt.Sprintf("token %q is limited to tables %s and cannot write through the catalog", t.Name, strings.Join(t.Tables, ", ")))
		return
	}
	segs := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(segs) >= 5 && segs[0] == "v1" && segs[1] == "namespaces" && segs[3] == "tables":
		if !slices.Contains(t.Tables, segs[4]) {
			// As though it did not exist: a limited token does not learn
			// which other tables there are.
			catalogError(w, http.StatusNotFound, "NoSuchTableException", "no such table: "+segs[4])
			return
		}
		c.inner.ServeHTTP(w, r2)
	case len(segs) == 4 && segs[0] == "v1" && segs[1] == "namespaces" && segs[3] == "tables":
		c.listTables(w, r2, t)
	case len(segs) >= 5 && segs[0] == "v1" && segs[1] == "namespaces" && segs[3] == "views":
		c.loadView(w, r2, t, segs[2], segs[4])
	case len(segs) == 4 && segs[0] == "v1" && segs[1] == "namespaces" && segs[3] == "views":
		c.listViews(w, r2, t, segs[2])
	default:
		c.inner.ServeHTTP(w, r2)
	}
}

// listTables answers the table listing with the tables t may read.
func (c *catalogAPI) listTables(w http.ResponseWriter, r *http.Request, t config.Token) {
	c.filterListing(w, r, "table", func(name string) bool { return slices.Contains(t.Tables, name) })
}

// filterListing answers a listing of the inner catalog's with the
// identifiers whose name keep keeps; what names the kind in errors.
func (c *catalogAPI) filterListing(w http.ResponseWriter, r *http.Request, what string, keep func(name string) bool) {
	rec := httptest.NewRecorder()
	c.inner.ServeHTTP(rec, r)
	if rec.Code != http.StatusOK {
		copyAnswer(w, rec)
		return
	}
	var list struct {
		Identifiers []struct {
			Namespace []string `json:"namespace"`
			Name      string   `json:"name"`
		} `json:"identifiers"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		c.h.log.Error("catalog: "+what+" listing", "err", err)
		catalogError(w, http.StatusInternalServerError, "ServiceFailureException", "the "+what+" listing could not be read")
		return
	}
	kept := list.Identifiers[:0]
	for _, id := range list.Identifiers {
		if keep(id.Name) {
			kept = append(kept, id)
		}
	}
	list.Identifiers = kept
	writeJSON(w, http.StatusOK, list)
}

// copyAnswer writes what rec recorded to w.
func copyAnswer(w http.ResponseWriter, rec *httptest.ResponseRecorder) {
	for k, vs := range rec.Header() {
		w.Header()[k] = vs
	}
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes())
}

// authenticate returns the token of the request's bearer if it holds the
// catalog scope: a configured token, or an access token issued to one
// that still has the same hash and holds the scope (so that removing,
// rotating or narrowing the [[server.token]] revokes its access tokens at
// once). Else it answers
// 401 or 403 and returns false.
func (c *catalogAPI) authenticate(w http.ResponseWriter, r *http.Request) (config.Token, bool) {
	h := c.h
	presented, ok := bearer(r)
	if !ok {
		h.refuseCatalog(w, r, http.StatusUnauthorized, metrics.ReasonMissing, "",
			"a bearer token is required: Authorization: Bearer <token>, a token with the catalog scope or one of "+oauthTokensPath)
		return config.Token{}, false
	}
	sum := sha256.Sum256([]byte(presented))
	t, found := h.tokenOfHash(sum)
	if !found {
		issuer, ok, err := h.tokens.Issuer(r.Context(), sum, h.o.Clock())
		if err != nil {
			h.log.Error("catalog: access token lookup", "err", err)
			catalogError(w, http.StatusServiceUnavailable, "ServiceUnavailableException", "the access token could not be checked: retry")
			return config.Token{}, false
		}
		if ok {
			t, found = auth.Issuer(h.o.Tokens, issuer.Name, issuer.Hash)
		}
	}
	if !found {
		h.refuseCatalog(w, r, http.StatusUnauthorized, metrics.ReasonInvalid, "", "the bearer token is not valid, or it expired")
		return config.Token{}, false
	}
	if !slices.Contains(t.Scopes, config.ScopeCatalog) {
		h.refuseCatalog(w, r, http.StatusForbidden, metrics.ReasonForbidden, t.Name,
			fmt.Sprintf("token %q lacks the scope: want %s", t.Name, config.ScopeCatalog))
		return config.Token{}, false
	}
	return t, true
}

// tokenOfHash returns the configured token whose hash is sum, compared
// with every one in constant time as guard does.
func (h *handler) tokenOfHash(sum [32]byte) (config.Token, bool) {
	match := -1
	for i := range h.o.Tokens {
		if subtle.ConstantTimeCompare(sum[:], h.o.Tokens[i].Hash[:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		return config.Token{}, false
	}
	return h.o.Tokens[match], true
}

// tokenNamed returns the configured token called name.
func (h *handler) tokenNamed(name string) (config.Token, bool) {
	i := slices.IndexFunc(h.o.Tokens, func(t config.Token) bool { return t.Name == name })
	if i < 0 {
		return config.Token{}, false
	}
	return h.o.Tokens[i], true
}

// refuseCatalog is refuse in the catalog's ErrorModel: counted, logged
// without the token, and with WWW-Authenticate on a 401.
func (h *handler) refuseCatalog(w http.ResponseWriter, r *http.Request, status int, reason, name, msg string) {
	h.metrics.AuthFailure(r.Context(), reason)
	h.log.LogAttrs(r.Context(), slog.LevelWarn, "request refused", slog.String("reason", reason),
		slog.String("token", name), slog.String("method", r.Method), slog.String("path", r.URL.Path),
		slog.String("remote", r.RemoteAddr))
	typ := "ForbiddenException"
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="meterstore"`)
		typ = "NotAuthorizedException"
	}
	catalogError(w, status, typ, msg)
}

// oauthError answers a token request with RFC 6749's error body.
func oauthError(w http.ResponseWriter, status int, code, desc string) {
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="meterstore"`)
	}
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

// tokens is the OAuth2 token endpoint, client credentials grant only:
// client_id is a [[server.token]]'s name and client_secret the token
// itself, in the form or as HTTP Basic credentials. The access token is
// 32 random bytes, recorded in PostgreSQL as its SHA-256 (store:
// RecordAccessToken), so that every serve on the database accepts it and
// none can recover it; it expires after Options.CatalogTokenLifetime. The
// scope asked for is not checked (clients send "catalog" or
// "PRINCIPAL_ROLE:ALL"): what the token may do is its [[server.token]]'s.
func (c *catalogAPI) tokens(w http.ResponseWriter, r *http.Request) {
	h := c.h
	r.Body = http.MaxBytesReader(w, r.Body, oauthMaxBody)
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "the body must be application/x-www-form-urlencoded: "+err.Error())
		return
	}
	if gt := r.PostForm.Get("grant_type"); gt != "client_credentials" {
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type",
			fmt.Sprintf("grant_type %q: only client_credentials is supported", gt))
		return
	}
	id, secret, basic := r.BasicAuth()
	if !basic {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id == "" || secret == "" {
		oauthError(w, http.StatusBadRequest, "invalid_request", "client_id and client_secret are required")
		return
	}
	sum := sha256.Sum256([]byte(secret))
	t, named := h.tokenNamed(id)
	// Compared in constant time, and compared even for an unknown name,
	// so that the answer's timing tells nothing of either.
	if subtle.ConstantTimeCompare(sum[:], t.Hash[:]) != 1 || !named {
		h.metrics.AuthFailure(r.Context(), metrics.ReasonInvalid)
		h.log.LogAttrs(r.Context(), slog.LevelWarn, "request refused", slog.String("reason", metrics.ReasonInvalid),
			slog.String("client_id", id), slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.String("remote", r.RemoteAddr))
		oauthError(w, http.StatusUnauthorized, "invalid_client", "unknown client_id or wrong client_secret")
		return
	}
	if !slices.Contains(t.Scopes, config.ScopeCatalog) {
		h.metrics.AuthFailure(r.Context(), metrics.ReasonForbidden)
		h.log.LogAttrs(r.Context(), slog.LevelWarn, "request refused", slog.String("reason", metrics.ReasonForbidden),
			slog.String("token", t.Name), slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.String("remote", r.RemoteAddr))
		oauthError(w, http.StatusBadRequest, "unauthorized_client",
			fmt.Sprintf("token %q lacks the catalog scope", t.Name))
		return
	}
	b := make([]byte, 32)
	rand.Read(b) // never fails
	access := base64.RawURLEncoding.EncodeToString(b)
	now := h.o.Clock()
	if err := h.tokens.Record(r.Context(), sha256.Sum256([]byte(access)), accesstoken.Issuer{Name: t.Name, Hash: t.Hash}, now, now.Add(c.lifetime)); err != nil {
		h.log.Error("catalog: record access token", "client_id", t.Name, "err", err)
		oauthError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "the access token could not be recorded: retry")
		return
	}
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token":      access,
		"token_type":        "bearer",
		"expires_in":        int64(c.lifetime / time.Second),
		"issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
		"scope":             config.ScopeCatalog,
	})
}

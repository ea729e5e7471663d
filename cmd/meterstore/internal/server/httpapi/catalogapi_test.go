package httpapi

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/store"
)

// catalogStore opens a store and returns it with its catalog, which has
// the table meterstore.power and, made here, meterstore.gas.
func catalogStore(t *testing.T) (*store.Store, *catalog.Catalog) {
	t.Helper()
	var cat *catalog.Catalog
	s := openStore(t, func(o *store.Options) { cat, _ = o.Catalog.(*catalog.Catalog) })
	if cat == nil {
		t.Fatal("the store's catalog is not MeterStore's own")
	}
	sc := iceberg.NewSchema(1, iceberg.NestedField{ID: 1, Name: "x", Type: iceberg.PrimitiveTypes.Int64})
	if _, err := cat.CreateTable(t.Context(), table.Identifier{"meterstore", "gas"}, sc); err != nil {
		t.Fatal(err)
	}
	return s, cat
}

// catalogAnswer is one answer of the catalog's mount.
type catalogAnswer struct {
	code int
	hdr  http.Header
	body map[string]any
	raw  string
}

// errType is the ErrorModel type of the answer.
func (a catalogAnswer) errType() string {
	e, _ := a.body["error"].(map[string]any)
	s, _ := e["type"].(string)
	return s
}

// catalogCall sends a request with bearer tok ("" for none) and a form
// body (nil for none); every answer with a body must be JSON.
func catalogCall(t *testing.T, h http.Handler, method, path, tok string, form url.Values) catalogAnswer {
	t.Helper()
	var r *http.Request
	if form != nil {
		r = httptest.NewRequest(method, path, strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		r = httptest.NewRequest(method, path, nil)
	}
	if tok != "" {
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	a := catalogAnswer{code: w.Code, hdr: w.Header(), raw: w.Body.String()}
	if w.Body.Len() > 0 {
		if ct := w.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: Content-Type %q", method, path, ct)
		}
		if err := json.Unmarshal(w.Body.Bytes(), &a.body); err != nil {
			t.Fatalf("%s %s: %d %q is not JSON: %v", method, path, w.Code, w.Body, err)
		}
	}
	return a
}

// TestCatalogAuth: every catalog route needs a token with the catalog
// scope, refused in the protocol's ErrorModel otherwise; a token limited
// to tables sees only those and writes nothing.
func TestCatalogAuth(t *testing.T) {
	s, cat := catalogStore(t)
	reader, readerTok := token(t, "spark", config.ScopeCatalog)
	query, queryTok := token(t, "reporting", config.ScopeQuery)
	limited, limitedTok := token(t, "power-only", config.ScopeCatalog)
	limited.Tables = []string{"power"}
	var logs bytes.Buffer
	h, err := New(s, Options{Tokens: []config.Token{reader, query, limited}, Catalog: cat,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, method, path, tok string
		code                    int
		typ                     string
	}{
		{"no token", "GET", "/iceberg/v1/config", "", 401, "NotAuthorizedException"},
		{"no token, a table", "GET", "/iceberg/v1/namespaces/meterstore/tables/power", "", 401, "NotAuthorizedException"},
		{"no token, unknown route", "GET", "/iceberg/v1/nothing", "", 401, "NotAuthorizedException"},
		{"wrong token", "GET", "/iceberg/v1/namespaces", readerTok + "x", 401, "NotAuthorizedException"},
		{"query scope", "GET", "/iceberg/v1/config", queryTok, 403, "ForbiddenException"},
		{"query scope, a table", "GET", "/iceberg/v1/namespaces/meterstore/tables/power", queryTok, 403, "ForbiddenException"},
		{"catalog scope", "GET", "/iceberg/v1/config", readerTok, 200, ""},
		{"catalog scope, a table", "GET", "/iceberg/v1/namespaces/meterstore/tables/power", readerTok, 200, ""},
		{"limited, its table", "GET", "/iceberg/v1/namespaces/meterstore/tables/power", limitedTok, 200, ""},
		{"limited, another table", "GET", "/iceberg/v1/namespaces/meterstore/tables/gas", limitedTok, 404, "NoSuchTableException"},
		{"limited, a write", "DELETE", "/iceberg/v1/namespaces/meterstore/tables/power", limitedTok, 403, "ForbiddenException"},
		// Conformance through the mount.
		{"metadata table of Spark", "GET", "/iceberg/v1/namespaces/meterstore%1Fpower/tables/snapshots", readerTok, 404, "NoSuchTableException"},
		{"no such table", "GET", "/iceberg/v1/namespaces/meterstore/tables/water", readerTok, 404, "NoSuchTableException"},
		{"no such namespace", "GET", "/iceberg/v1/namespaces/nope", readerTok, 404, "NoSuchNamespaceException"},
		{"multi-level namespace", "GET", "/iceberg/v1/namespaces/a%1Fb/tables", readerTok, 404, "NoSuchNamespaceException"},
		{"unknown route", "GET", "/iceberg/v1/namespaces/meterstore/functions", readerTok, 404, "NotFoundException"},
		{"a write, read-only", "POST", "/iceberg/v1/namespaces", readerTok, 405, "MethodNotAllowedException"},
		{"a purge, read-only", "DELETE", "/iceberg/v1/namespaces/meterstore/tables/power?purgeRequested=true", readerTok, 405, "MethodNotAllowedException"},
	} {
		a := catalogCall(t, h, tc.method, tc.path, tc.tok, nil)
		if a.code != tc.code || a.errType() != tc.typ {
			t.Errorf("%s: %s %s: %d %s; want %d %s", tc.name, tc.method, tc.path, a.code, a.raw, tc.code, tc.typ)
		}
		if a.code == 401 && a.hdr.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without WWW-Authenticate", tc.name)
		}
	}
	// A client without a credential is told so, whatever placeholder it
	// sends (PyIceberg: "Bearer None"), as curl without a header is; a
	// wrong token is told it is not valid.
	for _, tc := range []struct{ tok, want string }{
		{"", "a bearer token is required"},
		{"None", "a bearer token is required"},
		{"null", "a bearer token is required"},
		{readerTok + "x", "the bearer token is not valid"},
	} {
		a := catalogCall(t, h, "GET", "/iceberg/v1/config", tc.tok, nil)
		msg, _ := a.body["error"].(map[string]any)["message"].(string)
		if a.code != 401 || !strings.HasPrefix(msg, tc.want) {
			t.Errorf("bearer %q: %d %s; want 401 %q", tc.tok, a.code, a.raw, tc.want)
		}
	}
	// The endpoints advertised are the reads; the config names no writes.
	cfg := catalogCall(t, h, "GET", "/iceberg/v1/config", readerTok, nil)
	eps, _ := cfg.body["endpoints"].([]any)
	if len(eps) != 9 || slices.ContainsFunc(eps, func(e any) bool {
		return !strings.HasPrefix(e.(string), "GET ") && !strings.HasPrefix(e.(string), "HEAD ")
	}) {
		t.Errorf("endpoints %v", eps)
	}
	list := func(tok string) []string {
		a := catalogCall(t, h, "GET", "/iceberg/v1/namespaces/meterstore/tables", tok, nil)
		var names []string
		ids, _ := a.body["identifiers"].([]any)
		for _, id := range ids {
			names = append(names, id.(map[string]any)["name"].(string))
		}
		slices.Sort(names)
		return names
	}
	if got := list(readerTok); !slices.Equal(got, []string{"gas", "power"}) {
		t.Errorf("tables listed to the catalog token: %v", got)
	}
	if got := list(limitedTok); !slices.Equal(got, []string{"power"}) {
		t.Errorf("tables listed to the limited token: %v", got)
	}
	// The storage properties of a file warehouse are none; the table's
	// metadata carries gc.enabled=false.
	load := catalogCall(t, h, "GET", "/iceberg/v1/namespaces/meterstore/tables/power", readerTok, nil)
	md, _ := load.body["metadata"].(map[string]any)
	if props, _ := md["properties"].(map[string]any); props["gc.enabled"] != "false" {
		t.Errorf("served properties %v", md["properties"])
	}
	for _, secret := range []string{readerTok, queryTok, limitedTok} {
		if strings.Contains(logs.String(), secret) {
			t.Fatalf("the log holds a token:\n%s", logs.String())
		}
	}
	if !strings.Contains(logs.String(), "reason=forbidden") || !strings.Contains(logs.String(), "reason=missing") {
		t.Errorf("refusals not logged:\n%s", logs.String())
	}
}

// TestCatalogOAuth: the token endpoint exchanges a token's name and text
// for an access token that every handler on the database accepts until
// it expires, and that dies with its [[server.token]] or with a change of
// its hash; wrong credentials get RFC 6749's errors, and no secret reaches
// the log.
func TestCatalogOAuth(t *testing.T) {
	s, cat := catalogStore(t)
	reader, readerTok := token(t, "spark", config.ScopeCatalog)
	query, queryTok := token(t, "reporting", config.ScopeQuery)
	var clock testClock
	t0 := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	clock.Set(t0)
	var logs bytes.Buffer
	opts := Options{Tokens: []config.Token{reader, query}, Catalog: cat, CatalogTokenLifetime: 30 * time.Minute,
		Clock: clock.Now, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	h, err := New(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	form := func(kv ...string) url.Values {
		v := url.Values{}
		for i := 0; i < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	for _, tc := range []struct {
		name string
		form url.Values
		code int
		err  string
	}{
		{"wrong secret", form("grant_type", "client_credentials", "client_id", "spark", "client_secret", readerTok+"x"), 401, "invalid_client"},
		{"unknown client", form("grant_type", "client_credentials", "client_id", "nobody", "client_secret", readerTok), 401, "invalid_client"},
		{"another token's secret", form("grant_type", "client_credentials", "client_id", "spark", "client_secret", queryTok), 401, "invalid_client"},
		{"no secret", form("grant_type", "client_credentials", "client_id", "spark"), 400, "invalid_request"},
		{"password grant", form("grant_type", "password", "client_id", "spark", "client_secret", readerTok), 400, "unsupported_grant_type"},
		{"query scope", form("grant_type", "client_credentials", "client_id", "reporting", "client_secret", queryTok), 400, "unauthorized_client"},
	} {
		a := catalogCall(t, h, "POST", "/iceberg/v1/oauth/tokens", "", tc.form)
		if a.code != tc.code || a.body["error"] != tc.err || a.body["error_description"] == "" {
			t.Errorf("%s: %d %s; want %d %s", tc.name, a.code, a.raw, tc.code, tc.err)
		}
		if _, ok := a.body["access_token"]; ok {
			t.Errorf("%s: an access token was issued", tc.name)
		}
	}

	a := catalogCall(t, h, "POST", "/iceberg/v1/oauth/tokens", "",
		form("grant_type", "client_credentials", "client_id", "spark", "client_secret", readerTok, "scope", "catalog"))
	access, _ := a.body["access_token"].(string)
	if a.code != 200 || len(access) < 40 || a.body["token_type"] != "bearer" || a.body["expires_in"] != float64(1800) ||
		a.hdr.Get("Cache-Control") != "no-store" {
		t.Fatalf("token: %d %s", a.code, a.raw)
	}
	// HTTP Basic credentials work as well, and give another token.
	r := httptest.NewRequest("POST", "/iceberg/v1/oauth/tokens", strings.NewReader("grant_type=client_credentials&scope=PRINCIPAL_ROLE%3AALL"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.SetBasicAuth("spark", readerTok)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var basic map[string]any
	json.Unmarshal(w.Body.Bytes(), &basic)
	if w.Code != 200 || basic["access_token"] == access || basic["access_token"] == nil {
		t.Errorf("token with Basic credentials: %d %s", w.Code, w.Body)
	}

	// The access token reads the catalog, here and on another handler on
	// the same database (another serve process).
	h2, err := New(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, hh := range []http.Handler{h, h2} {
		if a := catalogCall(t, hh, "GET", "/iceberg/v1/namespaces/meterstore/tables/power", access, nil); a.code != 200 {
			t.Errorf("the access token: %d %s", a.code, a.raw)
		}
	}
	// It is no static token: the rest of the API refuses it.
	if a := catalogCall(t, h, "GET", "/v1/status", access, nil); a.code != 401 {
		t.Errorf("the access token on /v1/status: %d %s", a.code, a.raw)
	}
	// Without its [[server.token]], it is refused at once.
	revoked, err := New(s, Options{Tokens: []config.Token{query}, Catalog: cat, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if a := catalogCall(t, revoked, "GET", "/iceberg/v1/namespaces", access, nil); a.code != 401 || a.errType() != "NotAuthorizedException" {
		t.Errorf("the access token of a removed token: %d %s", a.code, a.raw)
	}
	// Nor after its [[server.token]] was rotated: the same name with
	// another hash.
	rotated := reader
	rotated.Hash[0] ^= 1
	afterRotation, err := New(s, Options{Tokens: []config.Token{rotated, query}, Catalog: cat, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if a := catalogCall(t, afterRotation, "GET", "/iceberg/v1/namespaces", access, nil); a.code != 401 || a.errType() != "NotAuthorizedException" {
		t.Errorf("the access token of a rotated token: %d %s", a.code, a.raw)
	}
	// At its expiry it is refused.
	clock.Advance(30*time.Minute - time.Second)
	if a := catalogCall(t, h, "GET", "/iceberg/v1/namespaces", access, nil); a.code != 200 {
		t.Errorf("the access token a second before its expiry: %d %s", a.code, a.raw)
	}
	clock.Advance(time.Second)
	if a := catalogCall(t, h, "GET", "/iceberg/v1/namespaces", access, nil); a.code != 401 || a.errType() != "NotAuthorizedException" {
		t.Errorf("the access token at its expiry: %d %s", a.code, a.raw)
	}
	for _, secret := range []string{readerTok, queryTok, access} {
		if strings.Contains(logs.String(), secret) {
			t.Fatalf("the log holds a secret:\n%s", logs.String())
		}
	}
	if !strings.Contains(logs.String(), "client_id=nobody") {
		t.Errorf("the refused exchange is not logged:\n%s", logs.String())
	}
}

// TestCatalogWritable: with CatalogWritable the writes are served to a
// catalog token and advertised; a purge is refused with 501 and the table
// stays.
func TestCatalogWritable(t *testing.T) {
	s, cat := catalogStore(t)
	writer, writerTok := token(t, "spark", config.ScopeCatalog)
	h, err := New(s, Options{Tokens: []config.Token{writer}, Catalog: cat, CatalogWritable: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg := catalogCall(t, h, "GET", "/iceberg/v1/config", writerTok, nil)
	if eps, _ := cfg.body["endpoints"].([]any); !slices.Contains(eps, any("DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}")) {
		t.Errorf("writable endpoints %v", eps)
	}
	if a := catalogCall(t, h, "DELETE", "/iceberg/v1/namespaces/meterstore/tables/gas?purgeRequested=true", writerTok, nil); a.code != 501 || a.errType() != "NotImplementedException" {
		t.Errorf("purge: %d %s", a.code, a.raw)
	}
	if ok, err := cat.CheckTableExists(t.Context(), table.Identifier{"meterstore", "gas"}); !ok || err != nil {
		t.Fatalf("the table after a refused purge: %v %v", ok, err)
	}
	if a := catalogCall(t, h, "DELETE", "/iceberg/v1/namespaces/meterstore/tables/gas", writerTok, nil); a.code != 204 {
		t.Errorf("drop: %d %s", a.code, a.raw)
	}
	if a := catalogCall(t, h, "GET", "/iceberg/v1/namespaces/meterstore/tables/gas", writerTok, nil); a.code != 404 {
		t.Errorf("load after drop: %d %s", a.code, a.raw)
	}
}

package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/store"
)

// oaDoc is the part of an OpenAPI document the test reads.
type oaDoc struct {
	OpenAPI    string                             `yaml:"openapi"`
	Servers    []struct{ URL string }             `yaml:"servers"`
	Security   []map[string][]string              `yaml:"security"`
	Paths      map[string]map[string]*oaOperation `yaml:"paths"`
	Components struct {
		SecuritySchemes map[string]struct {
			Type   string `yaml:"type"`
			Scheme string `yaml:"scheme"`
		} `yaml:"securitySchemes"`
		Responses map[string]*oaResponse `yaml:"responses"`
		Schemas   map[string]*oaSchema   `yaml:"schemas"`
	} `yaml:"components"`
}

type oaOperation struct {
	// Security is nil when the operation takes the document's.
	Security    *[]map[string][]string `yaml:"security"`
	RequestBody *struct {
		Content map[string]any `yaml:"content"`
	} `yaml:"requestBody"`
	Responses map[string]*oaResponse `yaml:"responses"`
}

type oaResponse struct {
	Ref     string `yaml:"$ref"`
	Headers map[string]struct {
		Required bool `yaml:"required"`
	} `yaml:"headers"`
	Content map[string]struct {
		Schema *oaSchema `yaml:"schema"`
	} `yaml:"content"`
}

type oaSchema struct {
	Ref        string               `yaml:"$ref"`
	Type       any                  `yaml:"type"` // a name or a list of names
	Format     string               `yaml:"format"`
	Const      any                  `yaml:"const"`
	Required   []string             `yaml:"required"`
	Properties map[string]*oaSchema `yaml:"properties"`
	Items      *oaSchema            `yaml:"items"`
	AnyOf      []*oaSchema          `yaml:"anyOf"`
}

// oaMethods are the operations of a path item.
var oaMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

func parseOpenAPI(t *testing.T) *oaDoc {
	t.Helper()
	var d oaDoc
	dec := yaml.NewDecoder(bytes.NewReader(openAPIDoc))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	if !strings.HasPrefix(d.OpenAPI, "3.1.") {
		t.Errorf("openapi.yaml is OpenAPI %q; want 3.1", d.OpenAPI)
	}
	if len(d.Servers) == 0 || d.Servers[0].URL != "http://127.0.0.1:8080" {
		t.Errorf("servers: %v", d.Servers)
	}
	for name, s := range d.Components.SecuritySchemes {
		if s.Type != "http" || s.Scheme != "bearer" {
			t.Errorf("security scheme %s: %+v; want http bearer", name, s)
		}
	}
	for _, req := range d.Security {
		for name := range req {
			if _, ok := d.Components.SecuritySchemes[name]; !ok {
				t.Errorf("global security names an undeclared scheme %q", name)
			}
		}
	}
	if len(d.Security) == 0 {
		t.Error("openapi.yaml has no global security requirement")
	}
	return &d
}

// response returns the response of op for status, its reference
// resolved; nil if op declares none.
func (d *oaDoc) response(op *oaOperation, status int) *oaResponse {
	r := op.Responses[fmt.Sprint(status)]
	if r != nil && r.Ref != "" {
		r = d.Components.Responses[strings.TrimPrefix(r.Ref, "#/components/responses/")]
	}
	return r
}

// schema resolves a reference to a schema of the components.
func (d *oaDoc) schema(s *oaSchema) *oaSchema {
	for s != nil && s.Ref != "" {
		s = d.Components.Schemas[strings.TrimPrefix(s.Ref, "#/components/schemas/")]
	}
	return s
}

// check returns how the JSON value v (as encoding/json decodes into any)
// departs from s: a wrong type or const, a required property missing or
// a property s does not document.
func (d *oaDoc) check(s *oaSchema, v any, at string) []string {
	s = d.schema(s)
	if s == nil {
		return []string{at + ": an unresolved schema"}
	}
	if len(s.AnyOf) > 0 {
		var all []string
		for _, alt := range s.AnyOf {
			errs := d.check(alt, v, at)
			if len(errs) == 0 {
				return nil
			}
			all = append(all, errs...)
		}
		return []string{fmt.Sprintf("%s: matches none of anyOf: %s", at, strings.Join(all, "; "))}
	}
	if s.Const != nil && fmt.Sprint(s.Const) != fmt.Sprint(v) {
		return []string{fmt.Sprintf("%s: %v; want %v", at, v, s.Const)}
	}
	var types []string
	switch ty := s.Type.(type) {
	case string:
		types = []string{ty}
	case []any:
		for _, x := range ty {
			types = append(types, fmt.Sprint(x))
		}
	}
	got := jsonType(v)
	if len(types) > 0 && !slices.Contains(types, got) && !(got == "integer" && slices.Contains(types, "number")) {
		return []string{fmt.Sprintf("%s: a %s (%v); want %s", at, got, v, strings.Join(types, " or "))}
	}
	var errs []string
	switch v := v.(type) {
	case string:
		if s.Format == "date-time" {
			if _, err := time.Parse(time.RFC3339Nano, v); err != nil {
				errs = append(errs, fmt.Sprintf("%s: %q is not a date-time", at, v))
			}
		}
	case map[string]any:
		for _, name := range s.Required {
			if _, ok := v[name]; !ok {
				errs = append(errs, fmt.Sprintf("%s: no property %q", at, name))
			}
		}
		for _, name := range slices.Sorted(maps.Keys(v)) {
			ps, ok := s.Properties[name]
			if !ok {
				errs = append(errs, fmt.Sprintf("%s: property %q is not documented", at, name))
				continue
			}
			errs = append(errs, d.check(ps, v[name], at+"."+name)...)
		}
	case []any:
		if s.Items != nil {
			for i, x := range v {
				errs = append(errs, d.check(s.Items, x, fmt.Sprintf("%s[%d]", at, i))...)
			}
		}
	}
	return errs
}

// jsonType is the JSON Schema type of a decoded JSON value.
func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if v == math.Trunc(v) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// conforms checks an answer of the handler to the operation of method and
// path: its status is declared, with its media type and the headers it
// requires, and a JSON body satisfies the declared schema.
func (d *oaDoc) conforms(t *testing.T, method, path string, w *httptest.ResponseRecorder) {
	t.Helper()
	op := d.Paths[path][strings.ToLower(method)]
	what := fmt.Sprintf("%s %s answered %d", method, path, w.Code)
	if op == nil {
		t.Errorf("%s; the document has no such operation", what)
		return
	}
	resp := d.response(op, w.Code)
	if resp == nil {
		t.Errorf("%s, which the document does not declare: %s", what, w.Body)
		return
	}
	for name, h := range resp.Headers {
		if h.Required && w.Header().Get(name) == "" {
			t.Errorf("%s without the header %s the document requires", what, name)
		}
	}
	mt, _, err := mime.ParseMediaType(w.Header().Get("Content-Type"))
	if err != nil {
		t.Errorf("%s with Content-Type %q: %v", what, w.Header().Get("Content-Type"), err)
		return
	}
	media, ok := resp.Content[mt]
	if !ok {
		t.Errorf("%s with Content-Type %s; the document declares %v", what, mt, slices.Sorted(maps.Keys(resp.Content)))
		return
	}
	if mt != "application/json" {
		return
	}
	var body any
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Errorf("%s: the body %q is not JSON: %v", what, w.Body, err)
		return
	}
	for _, e := range d.check(media.Schema, body, "body") {
		t.Errorf("%s: %s\n%s", what, e, w.Body)
	}
}

// oaRequest is a request of method to path of the document with the
// bearer token tok ("" for none): {table} is the table power, and the
// body is sample's for the path, if any.
func oaRequest(t *testing.T, method, path, tok string, sample map[string][2]string) *http.Request {
	t.Helper()
	concrete := strings.NewReplacer("{table}", "power", "{malo_id}", "10000000017", "{obis_code}", "1-1:1.29.0").Replace(path)
	if strings.ContainsAny(concrete, "{}") {
		t.Fatalf("%s %s: a path parameter the test does not know", method, path)
	}
	ct, body := sample[path][0], sample[path][1]
	r := httptest.NewRequest(method, concrete, strings.NewReader(body))
	if ct != "" {
		r.Header.Set("Content-Type", ct)
	}
	if tok != "" {
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	return r
}

// TestOpenAPI holds openapi.yaml to the handler: the document's operations
// are the routes the handler registers, no more and no fewer, and the
// handler's answers are what the document declares.
func TestOpenAPI(t *testing.T) {
	d := parseOpenAPI(t)
	var cat *catalog.Catalog
	s := openStore(t, func(o *store.Options) { cat, _ = o.Catalog.(*catalog.Catalog) })
	now := time.Now().UTC()
	day := now.Truncate(24 * time.Hour)
	if err := s.EnsurePartitions(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	mp, exposition, err := Prometheus()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	// A token of every scope, so that every request passes the guard.
	ops, opsTok := token(t, "ops", config.ScopeAdmin, config.ScopeIngest, config.ScopeQuery, config.ScopeCatalog)
	loader, loaderTok := token(t, "loader", config.ScopeIngest)
	other, otherTok := token(t, "gas-loader", config.ScopeIngest)
	other.Tables = []string{"gas"}
	hh, err := New(s, Options{Tokens: []config.Token{ops, loader, other}, Meters: mp, Metrics: exposition, Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	h := hh.(*handler)
	// Bodies of the operations that take one: Content-Type and body.
	sample := map[string][2]string{
		ingestPath:  {"text/csv", readingsCSV(day, 4, 0)},
		"/v1/query": {"application/json", `{"table":"power","sql":"SELECT count(*) FROM readings"}`},
	}

	t.Run("documented operations are served", func(t *testing.T) {
		for _, path := range slices.Sorted(maps.Keys(d.Paths)) {
			for method, op := range d.Paths[path] {
				if !slices.Contains(oaMethods, method) {
					continue
				}
				method = strings.ToUpper(method)
				t.Run(method+" "+path, func(t *testing.T) {
					// The mux takes it to the route of its path, not to the
					// catch-all of unknown paths.
					if _, pattern := h.mux.Handler(oaRequest(t, method, path, "", sample)); pattern != method+" "+path && pattern != path {
						t.Errorf("the handler has no route %s %s: the mux takes it to %q", method, path, pattern)
					}
					// With a token of every scope: neither the router's 404
					// nor its 405, and an answer as the document declares.
					w := httptest.NewRecorder()
					h.ServeHTTP(w, oaRequest(t, method, path, opsTok, sample))
					if w.Code == http.StatusNotFound || w.Code == http.StatusMethodNotAllowed {
						t.Errorf("the handler does not serve %s %s: %d %s", method, path, w.Code, w.Body)
					} else {
						d.conforms(t, method, path, w)
					}
					// Without a token: 401 unless the operation needs none.
					security := d.Security
					if op.Security != nil {
						security = *op.Security
					}
					w = httptest.NewRecorder()
					h.ServeHTTP(w, oaRequest(t, method, path, "", sample))
					switch open := len(security) == 0; {
					case open && w.Code == http.StatusUnauthorized:
						t.Errorf("%s %s answers 401 without a token; the document needs none", method, path)
					case !open && w.Code != http.StatusUnauthorized:
						t.Errorf("%s %s answers %d without a token; the document needs one: %s", method, path, w.Code, w.Body)
					default:
						d.conforms(t, method, path, w)
					}
				})
			}
		}
	})

	t.Run("served routes are documented", func(t *testing.T) {
		if len(h.mux.patterns) == 0 {
			t.Fatal("the handler registered no routes")
		}
		documented := func(method, path string) bool {
			_, ok := d.Paths[path][strings.ToLower(method)]
			return ok
		}
		for _, p := range h.mux.patterns {
			method, path, ok := strings.Cut(p, " ")
			if !ok {
				// A pattern of any method: the catch-all of unknown paths,
				// the 405 of a documented path, or the prefix of a protocol
				// served whole (the Iceberg REST catalog under /iceberg/),
				// of which the document lists the paths it names.
				prefixed := strings.HasSuffix(p, "/") && slices.ContainsFunc(slices.Collect(maps.Keys(d.Paths)),
					func(path string) bool { return strings.HasPrefix(path, p) })
				if _, ok := d.Paths[p]; p != "/" && !ok && !prefixed {
					t.Errorf("the handler serves %s, which the document does not list", p)
				}
				continue
			}
			if !documented(method, path) {
				t.Errorf("the handler serves %s %s, which the document does not list", method, path)
			}
		}
		// The paths whose other methods answer 405.
		for path, method := range routes {
			if !documented(method, path) {
				t.Errorf("routes has %s %s, which the document does not list", method, path)
			}
		}
	})

	t.Run("answers conform", func(t *testing.T) {
		for _, tc := range []struct {
			name, table, tok, ct, body string
			status                     int
		}{
			{"ingest again", "power", loaderTok, "text/csv", readingsCSV(day, 4, 0), 200},
			{"ingest with a bad line 3", "power", loaderTok, "text/csv", readingsCSV(day.Add(time.Hour), 4, 3), 422},
			{"ingest of a bad header", "power", loaderTok, "text/csv", "sparte,nothing\n", 422},
			{"ingest without a token", "power", "", "text/csv", readingsCSV(day, 1, 0), 401},
			{"ingest with a wrong token", "power", opsTok + "x", "text/csv", "", 401},
			{"ingest with a token of another table", "power", otherTok, "text/csv", "", 403},
			{"ingest to no table", "gas", loaderTok, "text/csv", "", 404},
			{"ingest as JSON", "power", loaderTok, "application/json", "{}", 415},
		} {
			r := httptest.NewRequest("POST", "/v1/tables/"+tc.table+"/readings", strings.NewReader(tc.body))
			r.Header.Set("Content-Type", tc.ct)
			if tc.tok != "" {
				r.Header.Set("Authorization", "Bearer "+tc.tok)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.status {
				t.Errorf("%s: %d %s; want %d", tc.name, w.Code, w.Body, tc.status)
			}
			d.conforms(t, "POST", ingestPath, w)
		}
		for _, tc := range []struct {
			name, path, tok string
			status          int
		}{
			{"status", "/v1/status", opsTok, 200},
			{"status with scope ingest", "/v1/status", loaderTok, 403},
			{"metrics with scope ingest", "/metrics", loaderTok, 403},
			{"readyz", "/readyz", loaderTok, 200},
		} {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, oaRequest(t, "GET", tc.path, tc.tok, nil))
			if w.Code != tc.status {
				t.Errorf("%s: %d %s; want %d", tc.name, w.Code, w.Body, tc.status)
			}
			d.conforms(t, "GET", tc.path, w)
		}
		// The document served is the one embedded.
		w := httptest.NewRecorder()
		h.ServeHTTP(w, oaRequest(t, "GET", openAPIPath, loaderTok, nil))
		if w.Code != 200 || !bytes.Equal(w.Body.Bytes(), openAPIDoc) {
			t.Errorf("GET %s: %d, %d bytes; want the %d of openapi.yaml", openAPIPath, w.Code, w.Body.Len(), len(openAPIDoc))
		}
	})
}

package httpapi

import (
	"fmt"
	"slices"
	"testing"

	"github.com/meterstore/meterstore/config"
)

// TestCatalogViews: the readings views of the catalog's mount take the
// tables' tokens: none is 401, scope query 403, a catalog token reads
// them, a token limited to tables reads the views of its tables only (the
// others are as though they did not exist), and writes are refused;
// GET /iceberg/v1/config advertises the view routes.
func TestCatalogViews(t *testing.T) {
	s, cat := catalogStore(t)
	reader, readerTok := token(t, "spark", config.ScopeCatalog)
	query, queryTok := token(t, "reporting", config.ScopeQuery)
	power, powerTok := token(t, "power-only", config.ScopeCatalog)
	power.Tables = []string{"power"}
	gas, gasTok := token(t, "gas-only", config.ScopeCatalog)
	gas.Tables = []string{"gas"}
	h, err := New(s, Options{Tokens: []config.Token{reader, query, power, gas}, Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	const (
		views = "/iceberg/v1/namespaces/meterstore/views"
		view  = views + "/power_readings"
	)
	for _, tc := range []struct {
		name, method, path, tok string
		code                    int
		typ                     string
	}{
		{"no token, list", "GET", views, "", 401, "NotAuthorizedException"},
		{"no token, load", "GET", view, "", 401, "NotAuthorizedException"},
		{"no token, exists", "HEAD", view, "", 401, ""},
		{"wrong token", "GET", view, readerTok + "x", 401, "NotAuthorizedException"},
		{"query scope", "GET", view, queryTok, 403, "ForbiddenException"},
		{"catalog scope", "GET", view, readerTok, 200, ""},
		{"catalog scope, exists", "HEAD", view, readerTok, 204, ""},
		{"limited, its table's view", "GET", view, powerTok, 200, ""},
		{"limited, another table's view", "GET", view, gasTok, 404, "NoSuchViewException"},
		{"limited, another table's view exists", "HEAD", view, gasTok, 404, ""},
		{"limited, no view name", "GET", views + "/power", powerTok, 404, "NoSuchViewException"},
		{"no such view", "GET", views + "/water_readings", readerTok, 404, "NoSuchViewException"},
		{"a table without a merge key", "GET", views + "/gas_readings", readerTok, 404, "NoSuchViewException"},
		{"no such view, exists", "HEAD", views + "/water_readings", readerTok, 404, ""},
		{"create a view", "POST", views, readerTok, 405, "MethodNotAllowedException"},
		{"replace a view", "POST", view, readerTok, 405, "MethodNotAllowedException"},
		{"drop a view", "DELETE", view, readerTok, 405, "MethodNotAllowedException"},
		{"rename a view", "POST", "/iceberg/v1/views/rename", readerTok, 405, "MethodNotAllowedException"},
		{"limited, drop a view", "DELETE", view, powerTok, 403, "ForbiddenException"},
	} {
		a := catalogCall(t, h, tc.method, tc.path, tc.tok, nil)
		// A recorder keeps what a HEAD answer writes; a server sends no body.
		if a.code != tc.code || (a.errType() != tc.typ && tc.method != "HEAD") {
			t.Errorf("%s: %s %s: %d %s; want %d %s", tc.name, tc.method, tc.path, a.code, a.raw, tc.code, tc.typ)
		}
	}

	list := func(tok string) []string {
		t.Helper()
		a := catalogCall(t, h, "GET", views, tok, nil)
		if a.code != 200 {
			t.Fatalf("views: %d %s", a.code, a.raw)
		}
		var names []string
		ids, _ := a.body["identifiers"].([]any)
		for _, id := range ids {
			names = append(names, id.(map[string]any)["name"].(string))
		}
		return names
	}
	if got := list(readerTok); !slices.Equal(got, []string{"power_readings"}) {
		t.Errorf("views listed to the catalog token: %v", got)
	}
	if got := list(powerTok); !slices.Equal(got, []string{"power_readings"}) {
		t.Errorf("views listed to the token of power: %v", got)
	}
	if got := list(gasTok); len(got) != 0 {
		t.Errorf("views listed to the token of gas: %v", got)
	}

	// The view through the mount: the SQL over the table, for Spark too.
	load := catalogCall(t, h, "GET", view, readerTok, nil)
	md, _ := load.body["metadata"].(map[string]any)
	versions, _ := md["versions"].([]any)
	if len(versions) != 1 {
		t.Fatalf("view metadata %s", load.raw)
	}
	reps, _ := versions[0].(map[string]any)["representations"].([]any)
	var dialects []string
	for _, r := range reps {
		dialects = append(dialects, r.(map[string]any)["dialect"].(string))
	}
	if !slices.Equal(dialects, []string{"spark", "trino", "duckdb"}) || md["format-version"] != float64(1) {
		t.Errorf("view metadata %s", load.raw)
	}
	// Its version names its namespace; with server.catalog_name, its
	// catalog too, as Trino needs.
	v0 := versions[0].(map[string]any)
	if fmt.Sprint(v0["default-namespace"]) != "[meterstore]" || v0["default-catalog"] != nil {
		t.Errorf("view version without a catalog name: %s", load.raw)
	}
	named, err := New(s, Options{Tokens: []config.Token{reader}, Catalog: cat, CatalogName: "lake"})
	if err != nil {
		t.Fatal(err)
	}
	nl := catalogCall(t, named, "GET", view, readerTok, nil)
	nmd, _ := nl.body["metadata"].(map[string]any)
	nv, _ := nmd["versions"].([]any)
	if len(nv) != 1 || nv[0].(map[string]any)["default-catalog"] != "lake" ||
		fmt.Sprint(nv[0].(map[string]any)["default-namespace"]) != "[meterstore]" {
		t.Errorf("view version with catalog name lake: %s", nl.raw)
	}

	cfg := catalogCall(t, h, "GET", "/iceberg/v1/config", readerTok, nil)
	eps, _ := cfg.body["endpoints"].([]any)
	for _, e := range []string{
		"GET /v1/{prefix}/namespaces/{namespace}/views",
		"GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
		"HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
	} {
		if !slices.Contains(eps, any(e)) {
			t.Errorf("endpoints %v lack %s", eps, e)
		}
	}
}

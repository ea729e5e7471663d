package rest_test

import (
	"encoding/json"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/catalog/catalogtest"
	"github.com/meterstore/meterstore/catalog/rest"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// restAnswer is one answer of a REST handler.
type restAnswer struct {
	code int
	body map[string]any
	raw  []byte
}

// errType is the ErrorModel type of the answer, "" if it has none.
func (a restAnswer) errType() string {
	e, _ := a.body["error"].(map[string]any)
	s, _ := e["type"].(string)
	return s
}

// restDo sends a request to base and decodes its JSON answer; a body
// that is not JSON fails the test.
func restDo(t *testing.T, base, method, path, body string) restAnswer {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, base+path, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	a := restAnswer{code: resp.StatusCode}
	a.raw, _ = io.ReadAll(resp.Body)
	if len(a.raw) > 0 {
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: Content-Type %q", method, path, ct)
		}
		if err := json.Unmarshal(a.raw, &a.body); err != nil {
			t.Fatalf("%s %s: %d %q is not JSON: %v", method, path, a.code, a.raw, err)
		}
	}
	return a
}

// TestRESTConformance holds the read-only handler to what the protocol's
// clients rely on: 404 NoSuchTable/NoSuchNamespace for what does not exist,
// multi-level namespaces included (Spark's metadata tables depend on it),
// an ErrorModel on every error including routes not served, and the
// endpoints of GET /v1/config exactly those served.
func TestRESTConformance(t *testing.T) {
	c := catalogtest.Backends()[1].Open(t)
	tbl := catalogtest.CreateTable(t, c, "power", nil)
	if _, err := catalogtest.AppendRows(t, tbl, "a", 10, nil); err != nil {
		t.Fatal(err)
	}
	readingsTable(t, c, "metering", "meters") // a table with a readings view
	ro := httptest.NewServer(rest.Handler(c, nil, views))
	defer ro.Close()

	for _, tc := range []struct {
		method, path string
		code         int
		typ          string
	}{
		// Spark loads cat.metering.power.snapshots first as a table of
		// namespace metering.power: NoSuchTable makes it fall back.
		{"GET", "/v1/namespaces/metering%1Fpower/tables/snapshots", 404, "NoSuchTableException"},
		{"GET", "/v1/namespaces/a%1Fb%1Fc/tables/power", 404, "NoSuchTableException"},
		{"GET", "/v1/namespaces/nope/tables/power", 404, "NoSuchTableException"},
		{"GET", "/v1/namespaces/metering/tables/gas", 404, "NoSuchTableException"},
		{"GET", "/v1/namespaces/metering/tables/bad.name", 404, "NoSuchTableException"},
		{"HEAD", "/v1/namespaces/metering%1Fpower/tables/snapshots", 404, ""},
		{"GET", "/v1/namespaces/metering%1Fpower", 404, "NoSuchNamespaceException"},
		{"HEAD", "/v1/namespaces/metering%1Fpower", 404, ""},
		{"GET", "/v1/namespaces/metering%1Fpower/tables", 404, "NoSuchNamespaceException"},
		{"GET", "/v1/namespaces/nope/tables", 404, "NoSuchNamespaceException"},
		{"GET", "/v1/namespaces?parent=metering%1Fpower", 404, "NoSuchNamespaceException"},
		// Routes not served: an ErrorModel, never plain text.
		{"GET", "/v1/namespaces/metering/views/v", 404, "NoSuchViewException"},
		{"GET", "/v1/namespaces/metering/views/power_readings", 404, "NoSuchViewException"},
		{"GET", "/nothing/here", 404, "NotFoundException"},
		{"GET", "/v1/namespaces/metering/tables/power/credentials", 404, "NotFoundException"},
		{"POST", "/v1/oauth/tokens", 405, "MethodNotAllowedException"},
		{"POST", "/v1/namespaces/metering/tables/power/metrics", 405, "MethodNotAllowedException"},
		{"OPTIONS", "/v1/config", 405, "MethodNotAllowedException"},
		{"PUT", "/v1/namespaces", 405, "MethodNotAllowedException"},
		{"DELETE", "/v1/namespaces/metering/tables/power?purgeRequested=true", 405, "MethodNotAllowedException"},
	} {
		a := restDo(t, ro.URL, tc.method, tc.path, "")
		if a.code != tc.code || a.errType() != tc.typ {
			t.Errorf("%s %s: %d %s, want %d %s", tc.method, tc.path, a.code, a.raw, tc.code, tc.typ)
		}
		if e, _ := a.body["error"].(map[string]any); tc.typ != "" && (e["message"] == "" || e["code"] != float64(tc.code)) {
			t.Errorf("%s %s: ErrorModel %v lacks a message or the code", tc.method, tc.path, e)
		}
	}

	// Each endpoint advertised is served, and each served route that
	// answers is advertised: every advertised one answers 2xx on objects
	// that exist; the writes, not advertised, are refused.
	cfg := restDo(t, ro.URL, "GET", "/v1/config", "")
	var advertised []string
	for _, e := range cfg.body["endpoints"].([]any) {
		advertised = append(advertised, e.(string))
	}
	want := []string{
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
	if !slices.Equal(advertised, want) {
		t.Errorf("endpoints %v, want %v", advertised, want)
	}
	for _, e := range advertised {
		method, path, _ := strings.Cut(e, " ")
		path = strings.NewReplacer("/{prefix}", "", "{namespace}", "metering", "{table}", "power", "{view}", "meters_readings").Replace(path)
		if a := restDo(t, ro.URL, method, path, ""); a.code/100 != 2 {
			t.Errorf("advertised %s: %d %s", e, a.code, a.raw)
		}
	}

	// The table served carries gc.enabled=false, so that engines refuse to
	// delete its files, and its snapshot IDs keep every digit.
	load := restDo(t, ro.URL, "GET", "/v1/namespaces/metering/tables/power", "")
	md, _ := json.Marshal(load.body["metadata"])
	var raw struct {
		Properties map[string]string `json:"properties"`
		Snapshots  []struct {
			ID json.Number `json:"snapshot-id"`
		} `json:"snapshots"`
	}
	dec := json.NewDecoder(strings.NewReader(string(load.raw)))
	dec.UseNumber()
	var whole struct {
		Metadata json.RawMessage `json:"metadata"`
	}
	if err := dec.Decode(&whole); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(whole.Metadata, &raw); err != nil {
		t.Fatal(err)
	}
	if raw.Properties["gc.enabled"] != "false" {
		t.Errorf("served properties %v lack gc.enabled=false", raw.Properties)
	}
	cur, err := c.LoadTable(t.Context(), table.Identifier{"metering", "power"})
	if err != nil {
		t.Fatal(err)
	}
	if cur.Properties()["gc.enabled"] != "" {
		t.Errorf("the table's own metadata changed: %v", cur.Properties())
	}
	if len(raw.Snapshots) != 1 || raw.Snapshots[0].ID.String() != strconv.FormatInt(cur.CurrentSnapshot().SnapshotID, 10) {
		t.Errorf("served snapshots %v, want ID %d", raw.Snapshots, cur.CurrentSnapshot().SnapshotID)
	}
	if _, err := table.ParseMetadataBytes(md); err != nil {
		t.Errorf("served metadata does not parse: %v", err)
	}
}

// TestRESTConfigSecrets: the config of /v1/config and of a loaded table
// holds what a reader needs to reach the files and never a credential,
// whoever passed one in.
func TestRESTConfigSecrets(t *testing.T) {
	c := catalogtest.Backends()[2].Open(t) // an S3 warehouse: endpoint, region, path style
	catalogtest.CreateTable(t, c, "power", nil)
	srv := httptest.NewServer(rest.Handler(c, map[string]string{
		"s3.secret-access-key": "SECRET", "s3.access-key-id": "AKID", "s3.session-token": "SESSION",
		"client.region": "eu-central-1",
	}))
	defer srv.Close()
	load := restDo(t, srv.URL, "GET", "/v1/namespaces/metering/tables/power", "")
	conf := restDo(t, srv.URL, "GET", "/v1/config", "")
	for _, body := range [][]byte{load.raw, conf.raw} {
		for _, secret := range []string{"SECRET", "AKID", "SESSION"} {
			if strings.Contains(string(body), secret) {
				t.Errorf("a credential is served: %s", body)
			}
		}
	}
	got, _ := load.body["config"].(map[string]any)
	for k, v := range c.Warehouse().Props {
		if got[k] != v {
			t.Errorf("table config %v: %s = %v, want %q", got, k, got[k], v)
		}
	}
	if got["s3.path-style-access"] != "true" || got["s3.endpoint"] == nil || got["client.region"] != "eu-central-1" {
		t.Errorf("table config %v lacks path style, endpoint or region", got)
	}
}

// TestRESTPurgeRefused: through the writable handler, a drop asking for a
// purge is refused with 501 and changes nothing, no file deleted; a plain
// drop then removes the table from the catalog and leaves every file.
func TestRESTPurgeRefused(t *testing.T) {
	c := catalogtest.Backends()[1].Open(t)
	tbl := catalogtest.CreateTable(t, c, "power", nil)
	if _, err := catalogtest.AppendRows(t, tbl, "a", 10, iceberg.Properties{}); err != nil {
		t.Fatal(err)
	}
	root := strings.TrimPrefix(c.Warehouse().Root, "file://")
	files := func() []string {
		var out []string
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				out = append(out, p)
			}
			return nil
		})
		return out
	}
	before := files()
	srv := httptest.NewServer(rest.WritableHandler(c, nil, views))
	defer srv.Close()
	if a := restDo(t, srv.URL, "DELETE", "/v1/namespaces/metering/tables/power?purgeRequested=true", ""); a.code != 501 || a.errType() != "NotImplementedException" {
		t.Fatalf("purge: %d %s", a.code, a.raw)
	}
	if ok, err := c.CheckTableExists(t.Context(), table.Identifier{"metering", "power"}); !ok || err != nil {
		t.Fatalf("after a refused purge the table exists: %v %v", ok, err)
	}
	if a := restDo(t, srv.URL, "DELETE", "/v1/namespaces/metering/tables/power?purgeRequested=false", ""); a.code != 204 {
		t.Fatalf("drop: %d %s", a.code, a.raw)
	}
	after := files()
	for _, f := range before {
		if !slices.Contains(after, f) {
			t.Errorf("%s was deleted", f)
		}
	}
	if a := restDo(t, srv.URL, "GET", "/v1/namespaces/metering/tables/power", ""); a.code != 404 || a.errType() != "NoSuchTableException" {
		t.Errorf("load after drop: %d %s", a.code, a.raw)
	}
}

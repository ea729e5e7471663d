package rest_test

import (
	"encoding/json"
	"errors"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/catalog/catalogtest"
	"github.com/meterstore/meterstore/catalog/rest"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestRESTReadOnly(t *testing.T) {
	c := catalogtest.Backends()[1].Open(t)
	tbl := catalogtest.CreateTable(t, c, "power", nil)
	if _, err := catalogtest.AppendRows(t, tbl, "w", 10, nil); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rest.Handler(c, map[string]string{"x": "y"}))
	defer srv.Close()
	get := func(method, path string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), method, srv.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var m map[string]any
		if len(body) > 0 {
			if err := json.Unmarshal(body, &m); err != nil {
				t.Fatalf("%s %s: %v: %s", method, path, err, body)
			}
		}
		return resp.StatusCode, m
	}
	for _, tc := range []struct {
		method, path string
		code         int
		key          string
	}{
		{"GET", "/v1/config", 200, "overrides"},
		{"GET", "/v1/namespaces", 200, "namespaces"},
		{"GET", "/v1/namespaces/metering", 200, "properties"},
		{"HEAD", "/v1/namespaces/metering", 204, ""},
		{"HEAD", "/v1/namespaces/nope", 404, ""},
		{"GET", "/v1/namespaces/nope", 404, "error"},
		{"GET", "/v1/namespaces/metering/tables", 200, "identifiers"},
		{"GET", "/v1/namespaces/metering/tables/power", 200, "metadata-location"},
		{"HEAD", "/v1/namespaces/metering/tables/power", 204, ""},
		{"HEAD", "/v1/namespaces/metering/tables/gas", 404, ""},
		{"GET", "/v1/namespaces/metering/tables/gas", 404, "error"},
		{"GET", "/v1/namespaces/bad.ns/tables/power", 404, "error"}, // no such namespace can exist
		{"POST", "/v1/namespaces", 405, "error"},
		{"POST", "/v1/namespaces/metering/tables", 405, "error"},
		{"POST", "/v1/namespaces/metering/tables/power", 405, "error"},
		{"DELETE", "/v1/namespaces/metering/tables/power", 405, "error"},
		{"DELETE", "/v1/namespaces/metering", 405, "error"},
		{"POST", "/v1/transactions/commit", 405, "error"},
	} {
		code, body := get(tc.method, tc.path)
		if code != tc.code {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, code, tc.code)
		}
		if tc.key != "" {
			if _, ok := body[tc.key]; !ok {
				t.Errorf("%s %s: body %v lacks %q", tc.method, tc.path, body, tc.key)
			}
		}
	}
	_, body := get("GET", "/v1/namespaces/metering/tables/power")
	md, _ := json.Marshal(body["metadata"])
	parsed, err := table.ParseMetadataBytes(md)
	if err != nil {
		t.Fatal(err)
	}
	if parsed.CurrentSnapshot() == nil || parsed.Version() != 2 {
		t.Fatalf("served metadata has no snapshot or version %d", parsed.Version())
	}
	// The table must still be intact after the refused mutations.
	if _, err := c.LoadTable(t.Context(), table.Identifier{"metering", "power"}); err != nil {
		t.Fatal(errors.Join(errors.New("table gone after refused DELETE"), err))
	}
}

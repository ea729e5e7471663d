package catalog_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/blob"
	"github.com/meterstore/meterstore/catalog"
)

// TestVersionHint checks what a reader without a catalog relies on: the
// hint names the newest version, without a trailing newline, and
// v<N>.metadata.json holds the current metadata; a mirror that a crash
// skipped is repaired by the next commit.
func TestVersionHint(t *testing.T) {
	for _, be := range backends()[:2] {
		t.Run(be.name, func(t *testing.T) {
			c := be.open(t)
			b := c.Warehouse().Bucket
			tbl := createTable(t, c, "power", nil)
			var err error
			for i := range 3 {
				if tbl, err = appendRows(t, tbl, fmt.Sprint("w", i), 4, nil); err != nil {
					t.Fatal(err)
				}
			}
			hint, err := b.Get(t.Context(), "metering/power/metadata/version-hint.text")
			if err != nil || string(hint) != "4" {
				t.Fatalf("version hint %q, %v; want \"4\"", hint, err)
			}
			assertMirror(t, c, b, 4, tbl.MetadataLocation())

			// A crash after the commit of version 5 and before its mirror.
			if tbl, err = appendRows(t, tbl, "w3", 4, nil); err != nil {
				t.Fatal(err)
			}
			if err := b.Delete(t.Context(), "metering/power/metadata/v5.metadata.json"); err != nil {
				t.Fatal(err)
			}
			if err := b.Put(t.Context(), "metering/power/metadata/version-hint.text", []byte("4")); err != nil {
				t.Fatal(err)
			}
			v5 := tbl.MetadataLocation()
			if tbl, err = appendRows(t, tbl, "w4", 4, nil); err != nil {
				t.Fatal(err)
			}
			assertMirror(t, c, b, 5, v5)
			assertMirror(t, c, b, 6, tbl.MetadataLocation())
			if hint, _ := b.Get(t.Context(), "metering/power/metadata/version-hint.text"); string(hint) != "6" {
				t.Fatalf("version hint %q after repair, want \"6\"", hint)
			}
		})
	}
}

func assertMirror(t *testing.T, c *catalog.Catalog, b *blob.Bucket, n int, loc string) {
	t.Helper()
	mirror, err := b.Get(t.Context(), fmt.Sprintf("metering/power/metadata/v%d.metadata.json", n))
	if err != nil {
		t.Fatalf("mirror v%d: %v", n, err)
	}
	key := strings.TrimPrefix(loc, c.Warehouse().Root+"/")
	orig, err := b.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if string(mirror) != string(orig) {
		t.Fatalf("v%d.metadata.json differs from the committed %s", n, key)
	}
}

func TestRESTReadOnly(t *testing.T) {
	c := backends()[1].open(t)
	tbl := createTable(t, c, "power", nil)
	if _, err := appendRows(t, tbl, "w", 10, nil); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler(map[string]string{"x": "y"}))
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

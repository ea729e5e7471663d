package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/internal/s3test"
	"github.com/meterstore/meterstore/store"
)

// s3CatalogStore opens a deployment of the table power on a fresh test
// database and a fresh bucket of the test's S3 server, and returns it
// with its catalog and the bucket.
func s3CatalogStore(t *testing.T) (*store.Store, *catalog.Catalog, string) {
	t.Helper()
	bucket := s3test.NewBucket(t)
	dir := t.TempDir()
	src := fmt.Sprintf(`
[postgres]
url = %q
data_dir = %q
[warehouse]
url = %q
[[table]]
name = "power"
resolutions = ["PT15M"]
`, pgtest.NewDB(t), dir, s3test.URL(t, bucket))
	cfg, err := config.Parse([]byte(src), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var cat *catalog.Catalog
	s, err := store.OpenConfig(t.Context(), cfg, nil, func(o *store.Options) { cat, _ = o.Catalog.(*catalog.Catalog) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if cat == nil {
		t.Fatal("the store's catalog is not MeterStore's own")
	}
	return s, cat, bucket
}

// loadWith loads meterstore.power with bearer tok and, unless empty, the
// access delegation header.
func loadWith(t *testing.T, h http.Handler, path, tok, delegation string) catalogAnswer {
	t.Helper()
	r := httptest.NewRequest("GET", path, nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	if delegation != "" {
		r.Header.Set(accessDelegationHeader, delegation)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	a := catalogAnswer{code: w.Code, hdr: w.Header(), raw: w.Body.String()}
	if err := json.Unmarshal(w.Body.Bytes(), &a.body); err != nil {
		t.Fatalf("GET %s: %d %q is not JSON: %v", path, w.Code, w.Body, err)
	}
	return a
}

// TestCatalogVendedCredentials: on an S3 warehouse a loaded table carries
// the settings a reader needs (endpoint, region, path style, under the
// names of PyIceberg and of Java); the vend key pair only when vending is
// configured, the token holds the storage scope and its client asks,
// never in /v1/config, never the warehouse's own keys, never in the log.
func TestCatalogVendedCredentials(t *testing.T) {
	s, cat, bucket := s3CatalogStore(t)
	reader, readerTok := token(t, "spark", config.ScopeCatalog)
	storer, storerTok := token(t, "trusted", config.ScopeCatalog, config.ScopeStorage)
	// The configuration refuses this token; the handler refuses it the
	// keys all the same.
	limited, limitedTok := token(t, "power-only", config.ScopeCatalog, config.ScopeStorage)
	limited.Tables = []string{"power"}
	keys := catalog.S3Keys{AccessKeyID: "VENDKEYID-READONLY", SecretAccessKey: "vend-s3cr3t-0123456789"}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tokens := []config.Token{reader, storer, limited}
	vending, err := New(s, Options{Tokens: tokens, Catalog: cat, CatalogVend: &keys, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := New(s, Options{Tokens: tokens, Catalog: cat, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	// An access token of the OAuth2 endpoint carries its token's scopes.
	tokAnswer := catalogCall(t, vending, "POST", "/iceberg/v1/oauth/tokens", "",
		url.Values{"grant_type": {"client_credentials"}, "client_id": {"trusted"}, "client_secret": {storerTok}})
	access, _ := tokAnswer.body["access_token"].(string)
	if access == "" {
		t.Fatalf("token: %d %s", tokAnswer.code, tokAnswer.raw)
	}

	const table = "/iceberg/v1/namespaces/meterstore/tables/power"
	endpoint := s3test.Endpoint(t)
	for _, tc := range []struct {
		name       string
		h          http.Handler
		tok        string
		delegation string
		vended     bool
	}{
		{"catalog scope, asking", vending, readerTok, vendedCredentials, false},
		{"storage scope, not asking", vending, storerTok, "", false},
		{"storage scope, asking for remote signing", vending, storerTok, "remote-signing", false},
		{"storage scope, asking", vending, storerTok, vendedCredentials, true},
		{"storage scope, asking among others", vending, storerTok, "remote-signing, Vended-Credentials", true},
		{"storage scope, access token, asking", vending, access, vendedCredentials, true},
		{"storage scope limited to tables, asking", vending, limitedTok, vendedCredentials, false},
		{"storage scope, asking, vending off", plain, storerTok, vendedCredentials, false},
	} {
		a := loadWith(t, tc.h, table, tc.tok, tc.delegation)
		if a.code != 200 {
			t.Errorf("%s: %d %s", tc.name, a.code, a.raw)
			continue
		}
		cfg, _ := a.body["config"].(map[string]any)
		for k, want := range map[string]string{
			"s3.endpoint": endpoint, "s3.region": s3test.Region(), "client.region": s3test.Region(),
			"s3.path-style-access": "true", "s3.force-virtual-addressing": "false",
		} {
			if cfg[k] != want {
				t.Errorf("%s: config[%q] = %v; want %q", tc.name, k, cfg[k], want)
			}
		}
		creds, hasCreds := a.body["storage-credentials"].([]any)
		switch {
		case tc.vended:
			want := []any{map[string]any{"prefix": "s3://" + bucket + "/", "config": map[string]any{
				"s3.access-key-id": keys.AccessKeyID, "s3.secret-access-key": keys.SecretAccessKey}}}
			if fmt.Sprint(creds) != fmt.Sprint(want) {
				t.Errorf("%s: storage-credentials %v; want %v", tc.name, creds, want)
			}
			if cfg["s3.access-key-id"] != keys.AccessKeyID || cfg["s3.secret-access-key"] != keys.SecretAccessKey {
				t.Errorf("%s: config without the vended keys: %v", tc.name, cfg)
			}
		case hasCreds || strings.Contains(a.raw, keys.SecretAccessKey) || strings.Contains(a.raw, keys.AccessKeyID):
			t.Errorf("%s: vended: %s", tc.name, a.raw)
		}
		// The warehouse's own keys, which write, are never handed out.
		if own := os.Getenv("AWS_SECRET_ACCESS_KEY"); own != "" && strings.Contains(a.raw, own) {
			t.Errorf("%s: the warehouse's own secret key is in the answer", tc.name)
		}
	}

	// /v1/config has the settings as defaults and never a key, asked or not.
	for _, tok := range []string{storerTok, access} {
		a := loadWith(t, vending, "/iceberg/v1/config", tok, vendedCredentials)
		defaults, _ := a.body["defaults"].(map[string]any)
		if a.code != 200 || defaults["s3.endpoint"] != endpoint || defaults["s3.path-style-access"] != "true" {
			t.Errorf("/v1/config: %d %s", a.code, a.raw)
		}
		if strings.Contains(a.raw, keys.SecretAccessKey) || strings.Contains(a.raw, keys.AccessKeyID) || strings.Contains(a.raw, "storage-credentials") {
			t.Errorf("/v1/config vends: %s", a.raw)
		}
	}
	// Nor does an answer that is not a table's: a table that does not
	// exist, a listing.
	for _, path := range []string{"/iceberg/v1/namespaces/meterstore/tables/water", "/iceberg/v1/namespaces/meterstore/tables", "/iceberg/v1/namespaces/meterstore"} {
		if a := loadWith(t, vending, path, storerTok, vendedCredentials); strings.Contains(a.raw, keys.SecretAccessKey) {
			t.Errorf("%s vends: %s", path, a.raw)
		}
	}
	if strings.Contains(logs.String(), keys.SecretAccessKey) {
		t.Errorf("the log holds the vended secret:\n%s", logs.String())
	}

	// A handler told to vend for a warehouse that is not on S3 is refused.
	fs, fcat := catalogStore(t)
	if _, err := New(fs, Options{Tokens: tokens, Catalog: fcat, CatalogVend: &keys}); err == nil || strings.Contains(err.Error(), keys.SecretAccessKey) {
		t.Errorf("vending for a file warehouse: %v", err)
	}
}

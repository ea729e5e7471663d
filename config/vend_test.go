package config

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// s3Warehouse is a [warehouse] section on S3.
const s3Warehouse = "[warehouse]\nurl = \"s3://lake?region=eu-central-1\"\n"

// TestCatalogVend: the vend settings are read, with the secret from the
// environment, and off by default.
func TestCatalogVend(t *testing.T) {
	if v := Default().Server.CatalogVend; v.Enabled || v.AccessKeyID != "" || v.SecretAccessKey != "" {
		t.Errorf("default %+v; want off, no keys", v)
	}
	c := mustParse(t, s3Warehouse+`[server]
catalog_vend_credentials = true
catalog_vend_access_key_id = "AKIAREADER"
catalog_vend_secret_access_key = "${READER_SECRET}"
[[server.token]]
name = "lake"
hash = "`+hashOf("t")+`"
scopes = ["catalog", "storage"]
`, "/srv/ms", map[string]string{"READER_SECRET": "s3cr3t-reader"})
	v := c.Server.CatalogVend
	if !v.Enabled || v.AccessKeyID != "AKIAREADER" || string(v.SecretAccessKey) != "s3cr3t-reader" {
		t.Errorf("CatalogVend = %+v", v)
	}
	if got := c.Server.Tokens[0].Scopes; len(got) != 2 || got[1] != ScopeStorage {
		t.Errorf("scopes %v", got)
	}
	// The secret shows nowhere it is formatted or logged.
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "vend", v.SecretAccessKey, "server", c.Server)
	for _, s := range []string{fmt.Sprintf("%v %+v %#v %s", c.Server, c.Server, c.Server, v.SecretAccessKey), logged.String()} {
		if strings.Contains(s, "s3cr3t") || !strings.Contains(s, "[redacted]") {
			t.Errorf("formatted: %s", s)
		}
	}
}

// TestCatalogVendProblems: vending needs a key pair of its own and an S3
// warehouse under the catalog serve mounts; the storage scope goes with
// catalog and with every table; no secret is echoed.
func TestCatalogVendProblems(t *testing.T) {
	tok := func(scopes, tables string) string {
		return "[[server.token]]\nname = \"a\"\nhash = \"" + hashOf("t") + "\"\nscopes = " + scopes + "\n" + tables
	}
	for _, tc := range []struct {
		name, src, key string
		line           int
		want           string
	}{
		{"enabled without keys", s3Warehouse + "[server]\ncatalog_vend_credentials = true\n", "server.catalog_vend_credentials", 4, "the warehouse's own keys are never vended"},
		{"key id alone", s3Warehouse + "[server]\ncatalog_vend_credentials = true\ncatalog_vend_access_key_id = \"AK\"\n", "server.catalog_vend_secret_access_key", 3, "go together"},
		{"secret alone", s3Warehouse + "[server]\ncatalog_vend_secret_access_key = \"s3cr3t\"\n", "server.catalog_vend_access_key_id", 3, "go together"},
		{"file warehouse", "[server]\ncatalog_vend_credentials = true\ncatalog_vend_access_key_id = \"AK\"\ncatalog_vend_secret_access_key = \"s3cr3t\"\n", "server.catalog_vend_credentials", 2, "not on S3"},
		{"rest catalog", s3Warehouse + "[catalog]\ntype = \"rest\"\nuri = \"http://127.0.0.1:8181\"\n[server]\ncatalog_vend_credentials = true\ncatalog_vend_access_key_id = \"AK\"\ncatalog_vend_secret_access_key = \"s3cr3t\"\n", "server.catalog_vend_credentials", 7, `catalog.type = "log"`},
		{"enabled as text", s3Warehouse + "[server]\ncatalog_vend_credentials = \"yes\"\n", "server.catalog_vend_credentials", 4, ""},
		{"storage without catalog", tok(`["query", "storage"]`, ""), "server.token[0].scopes", 4, `"storage" adds to "catalog"`},
		{"storage limited to tables", tok(`["catalog", "storage"]`, "tables = [\"power\"]\n[[table]]\nname = \"power\"\n"), "server.token[0].tables", 5, "reads every table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es := problems(t, tc.src)
			if len(es) != 1 {
				t.Fatalf("problems = %v; want one", es)
			}
			if e := es[0]; e.Key != tc.key || e.Line != tc.line || !strings.Contains(e.Error(), tc.want) || strings.Contains(e.Error(), "s3cr3t") {
				t.Errorf("problem = %q (key %q, line %d); want key %q, line %d, containing %q and no secret", e, e.Key, e.Line, tc.key, tc.line, tc.want)
			}
		})
	}
	// Keys without vending are allowed: turning vending off is one switch.
	c := mustParse(t, s3Warehouse+"[server]\ncatalog_vend_access_key_id = \"AK\"\ncatalog_vend_secret_access_key = \"s\"\n", "/srv/ms", nil)
	if c.Server.CatalogVend.Enabled {
		t.Error("vending is on without catalog_vend_credentials")
	}
}

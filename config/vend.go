package config

import (
	"net/url"
	"slices"
	"strings"
)

// CatalogVend is whether and which S3 key pair the Iceberg REST catalog
// hands to its readers, so that they read the files without keys of
// their own. The keys are long-lived (there is no STS here): whoever gets
// them reads the whole warehouse until they are rotated.
type CatalogVend struct {
	// Enabled vends the key pair to tokens with the scope storage that
	// ask for vended credentials (server.catalog_vend_credentials).
	Enabled bool
	// AccessKeyID and SecretAccessKey are the key pair vended, which
	// should be a read-only pair of their own: the warehouse's own keys,
	// which write, are never vended in their stead
	// (server.catalog_vend_access_key_id,
	// server.catalog_vend_secret_access_key).
	AccessKeyID     string
	SecretAccessKey Secret
}

// catalogVend reads the server.catalog_vend_* keys.
func (r *reader) catalogVend(raw *rawServer) CatalogVend {
	v := CatalogVend{
		Enabled:     r.boolean("server.catalog_vend_credentials", raw.VendCredentials, false),
		AccessKeyID: strings.TrimSpace(r.str("server.catalog_vend_access_key_id", raw.VendKeyID, "")),
	}
	// A secret is never echoed, in an error neither: r.text names the
	// variable of a ${VAR} that is not set, never a value.
	v.SecretAccessKey = Secret(strings.TrimSpace(r.str("server.catalog_vend_secret_access_key", raw.VendSecret, "")))
	if !r.ok("server.catalog_vend_credentials", "server.catalog_vend_access_key_id", "server.catalog_vend_secret_access_key") {
		return v
	}
	switch {
	case (v.AccessKeyID == "") != (v.SecretAccessKey == ""):
		key := "server.catalog_vend_secret_access_key"
		if v.AccessKeyID == "" {
			key = "server.catalog_vend_access_key_id"
		}
		r.errorf(key, "catalog_vend_access_key_id and catalog_vend_secret_access_key go together")
	case v.Enabled && v.AccessKeyID == "":
		// The warehouse's own keys write: handing them out by default
		// would make every reader a writer.
		r.errorf("server.catalog_vend_credentials", "true needs the key pair to vend: set catalog_vend_access_key_id and "+
			"catalog_vend_secret_access_key (a read-only pair; the warehouse's own keys are never vended)")
	}
	return v
}

// checkStorageScope checks the storage scope of the token at key: it
// adds to the catalog scope, and the keys it hands out read every table.
func (r *reader) checkStorageScope(key string, t Token) {
	if !slices.Contains(t.Scopes, ScopeStorage) {
		return
	}
	switch {
	case !slices.Contains(t.Scopes, ScopeCatalog):
		r.errorf(key+".scopes", "%q adds to %q, which the token lacks: credentials are vended with the tables the catalog loads",
			ScopeStorage, ScopeCatalog)
	case len(t.Tables) > 0:
		r.errorf(key+".tables", "a token limited to tables cannot hold the scope %q: the key pair vended reads every table of the warehouse",
			ScopeStorage)
	}
}

// checkVend checks server.catalog_vend_credentials against the warehouse
// and the catalog it would vend for.
func (r *reader) checkVend(c *Config) {
	if !c.Server.CatalogVend.Enabled || !r.ok("server.catalog_vend_credentials", "warehouse.url", "catalog.type") {
		return
	}
	if u, err := url.Parse(c.Warehouse.URL); err != nil || u.Scheme != "s3" {
		r.errorf("server.catalog_vend_credentials", "true vends S3 keys, and warehouse.url is not on S3")
		return
	}
	if c.Catalog.Type != "log" {
		r.errorf("server.catalog_vend_credentials", "true applies to the REST catalog that serve mounts, which needs catalog.type = \"log\"")
	}
}

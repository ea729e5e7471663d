package httpapi

// Vended storage credentials of the catalog under /iceberg: with
// Options.CatalogVend, a GET of a table answers a token with the scopes
// catalog and storage, whose client asked with
//
//	X-Iceberg-Access-Delegation: vended-credentials
//
// (PyIceberg sends it by default; Java clients with
// header.X-Iceberg-Access-Delegation=vended-credentials), with the key
// pair in the LoadTableResult's storage-credentials and config. Every
// other token, request and route gets the storage properties without a
// secret, as before; GET /v1/config never carries the keys. The keys are
// long-lived (no STS here), so the scope storage goes only to trusted
// readers, and a token limited to tables never gets them: they read every
// table of the warehouse.

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/auth"
	"github.com/meterstore/meterstore/config"
)

// The REST protocol's header by which a client asks for vended
// credentials, a comma-separated list of mechanisms.
const (
	accessDelegationHeader = "X-Iceberg-Access-Delegation"
	vendedCredentials      = "vended-credentials"
)

// vendCredential returns the storage credential of o.CatalogVend for the
// warehouse of o.Catalog; nil if there is nothing to vend.
func vendCredential(o Options) (*catalog.StorageCredential, error) {
	if o.CatalogVend == nil || o.Catalog == nil {
		return nil, nil
	}
	cred, err := o.Catalog.Warehouse().S3Credential(*o.CatalogVend)
	if err != nil {
		return nil, fmt.Errorf("httpapi: vended catalog credentials: %w", err)
	}
	return &cred, nil
}

// withCredentials returns r carrying the vended credential when there is
// one, r reads, its token may have it and its client asked for it; else r.
func (c *catalogAPI) withCredentials(r *http.Request, t config.Token) *http.Request {
	if c.vend == nil || r.Method != http.MethodGet || !auth.HasScope(t, config.ScopeStorage) ||
		len(t.Tables) > 0 || !asksVended(r.Header) {
		return r
	}
	return r.WithContext(catalog.WithStorageCredentials(r.Context(), *c.vend))
}

// asksVended reports whether h asks for vended credentials.
func asksVended(h http.Header) bool {
	for _, v := range h.Values(accessDelegationHeader) {
		for m := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(m), vendedCredentials) {
				return true
			}
		}
	}
	return false
}

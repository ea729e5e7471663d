package catalog

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// Handler serves the catalog over the Iceberg REST catalog protocol,
// read-only: configuration, namespaces, table listing and loading. Every
// mutating route answers 405, since commits must go through the log.
//
// Config is merged into the response of GET /v1/config and into each
// loaded table's config, for example the S3 endpoint readers should use.
func (c *Catalog) Handler(config map[string]string) http.Handler {
	if config == nil {
		config = map[string]string{}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/config", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{
			"defaults":  map[string]string{},
			"overrides": config,
		})
	})
	mux.HandleFunc("GET /v1/namespaces", func(w http.ResponseWriter, r *http.Request) {
		var parent table.Identifier
		if p := r.URL.Query().Get("parent"); p != "" {
			parent = strings.Split(p, "\x1f")
		}
		nss, err := c.ListNamespaces(r.Context(), parent)
		if err != nil {
			writeErr(w, err)
			return
		}
		if nss == nil {
			nss = []table.Identifier{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"namespaces": nss})
	})
	mux.HandleFunc("GET /v1/namespaces/{ns}", func(w http.ResponseWriter, r *http.Request) {
		ns := namespaceOf(r)
		props, err := c.LoadNamespaceProperties(r.Context(), ns)
		if err != nil {
			writeErr(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"namespace": ns, "properties": props})
	})
	mux.HandleFunc("HEAD /v1/namespaces/{ns}", func(w http.ResponseWriter, r *http.Request) {
		ok, err := c.CheckNamespaceExists(r.Context(), namespaceOf(r))
		writeStatus(w, ok, err)
	})
	mux.HandleFunc("GET /v1/namespaces/{ns}/tables", func(w http.ResponseWriter, r *http.Request) {
		type ident struct {
			Namespace []string `json:"namespace"`
			Name      string   `json:"name"`
		}
		ids := []ident{}
		for id, err := range c.ListTables(r.Context(), namespaceOf(r)) {
			if err != nil {
				writeErr(w, err)
				return
			}
			ids = append(ids, ident{Namespace: id[:1], Name: id[1]})
		}
		writeJSON(w, http.StatusOK, map[string]any{"identifiers": ids})
	})
	mux.HandleFunc("GET /v1/namespaces/{ns}/tables/{table}", func(w http.ResponseWriter, r *http.Request) {
		ident := append(namespaceOf(r), r.PathValue("table"))
		h, err := c.current(r.Context(), ident)
		if err != nil {
			writeErr(w, err)
			return
		}
		t, err := c.open(r.Context(), ident, h.MetadataLocation)
		if err != nil {
			writeErr(w, err)
			return
		}
		cfg := map[string]string{}
		for k, v := range c.wh.Props {
			cfg[k] = v
		}
		for k, v := range config {
			cfg[k] = v
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"metadata-location": h.MetadataLocation,
			"metadata":          t.Metadata(),
			"config":            cfg,
		})
	})
	mux.HandleFunc("HEAD /v1/namespaces/{ns}/tables/{table}", func(w http.ResponseWriter, r *http.Request) {
		ok, err := c.CheckTableExists(r.Context(), append(namespaceOf(r), r.PathValue("table")))
		writeStatus(w, ok, err)
	})
	readOnly := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "GET, HEAD")
		writeJSON(w, http.StatusMethodNotAllowed, errorBody("read-only catalog: commits go through the MeterStore log",
			"MethodNotAllowedException", http.StatusMethodNotAllowed))
	}
	for _, p := range []string{"/v1/", "/v1/namespaces", "/v1/namespaces/{ns}", "/v1/namespaces/{ns}/tables",
		"/v1/namespaces/{ns}/tables/{table}", "/v1/namespaces/{ns}/properties", "/v1/tables/rename", "/v1/transactions/commit"} {
		for _, m := range []string{"POST", "PUT", "DELETE", "PATCH"} {
			mux.HandleFunc(m+" "+p, readOnly)
		}
	}
	return mux
}

// namespaceOf decodes a namespace path segment; levels are separated by
// the unit separator, which validation then refuses.
func namespaceOf(r *http.Request) table.Identifier {
	return strings.Split(r.PathValue("ns"), "\x1f")
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func writeStatus(w http.ResponseWriter, ok bool, err error) {
	switch {
	case err != nil:
		w.WriteHeader(errCode(err))
	case ok:
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func errCode(err error) int {
	switch {
	case errors.Is(err, icecatalog.ErrNoSuchTable), errors.Is(err, icecatalog.ErrNoSuchNamespace):
		return http.StatusNotFound
	case errors.Is(err, icecatalog.ErrInvalidIdentifier):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

func writeErr(w http.ResponseWriter, err error) {
	code := errCode(err)
	typ := "ServiceFailureException"
	switch {
	case errors.Is(err, icecatalog.ErrNoSuchTable):
		typ = "NoSuchTableException"
	case errors.Is(err, icecatalog.ErrNoSuchNamespace):
		typ = "NoSuchNamespaceException"
	case code == http.StatusBadRequest:
		typ = "BadRequestException"
	}
	writeJSON(w, code, errorBody(err.Error(), typ, code))
}

func errorBody(msg, typ string, code int) map[string]any {
	return map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": code}}
}

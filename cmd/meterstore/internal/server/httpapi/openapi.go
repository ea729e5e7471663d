package httpapi

// GET /v1/openapi.yaml: the OpenAPI 3.1 document of this API, embedded in
// the binary, for a token of any scope. openapi_test.go holds it to the
// routes the handler registers and to the answers it gives.

import (
	_ "embed"
	"fmt"
	"net/http"
)

// openAPIPath is the route of the document.
const openAPIPath = "/v1/openapi.yaml"

//go:embed openapi.yaml
var openAPIDoc []byte

// routeOpenAPI registers the document's route, and a 405 for its path
// asked with another method.
func (h *handler) routeOpenAPI() {
	h.mux.Handle("GET "+openAPIPath, h.guard(nil, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(openAPIDoc)
	}))
	h.mux.HandleFunc(openAPIPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "GET")
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("%s takes GET, not %s", r.URL.Path, r.Method))
	})
}

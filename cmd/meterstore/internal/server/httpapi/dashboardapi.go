package httpapi

// The dashboard (package dashboard) on the API's mux: its page at / and
// its login and logout under /dashboard/. It takes the admin scope,
// through a session cookie or a bearer token; its answers are HTML.

import (
	"net/http"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/dashboard"
)

// routeDashboard mounts the dashboard newDashboard returns, if any. The page is served by unknown,
// which takes / because / is also the pattern of every unknown path: a
// pattern GET / would conflict with the catalog's /iceberg/ on the mux.
func (h *handler) routeDashboard(newDashboard func(dashboard.Options) *dashboard.Dashboard) {
	if newDashboard == nil {
		return
	}
	h.dash = newDashboard(dashboard.Options{Tokens: h.o.Tokens, Clock: h.o.Clock, Logger: h.log})
	h.mux.HandleFunc("GET "+dashboard.LoginPath, h.dash.LoginForm)
	h.mux.HandleFunc("POST "+dashboard.LoginPath, h.dash.Login)
	h.mux.HandleFunc("POST "+dashboard.LogoutPath, h.dash.Logout)
}

// servesDashboard reports whether r asks for the dashboard's page.
func servesDashboard(r *http.Request) bool {
	return r.URL.Path == dashboard.PagePath && (r.Method == http.MethodGet || r.Method == http.MethodHead)
}

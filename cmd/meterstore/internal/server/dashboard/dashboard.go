// Package dashboard is the dashboard page of meterstore serve: per table
// the watermark and its lag over time, the hot partitions, the archival
// history, invariant violations, health and quarantine with the reason,
// and completeness per balancing day, as server-rendered HTML with inline
// SVG charts (no JavaScript, no external assets).
//
// The page takes the admin scope. Browsers cannot send a bearer header
// from a link, so a person logs in with a token through a form and gets a
// session cookie (HttpOnly, SameSite=Strict, Secure over TLS); the session
// is kept hashed, with an expiry, in the store's table of access tokens.
// Programs may send Authorization: Bearer instead.
//
//	GET  /                   admin  the page; without a session 303 to the login page
//	GET  /dashboard/login    none   the login form
//	POST /dashboard/login    none   the form's token for a session cookie, 303 to /
//	POST /dashboard/logout   none   revokes the session, 303 to the login page
//
// The login form is the only form that changes state without a session;
// SameSite=Strict keeps the session cookie off every cross-site request,
// which is the dashboard's protection against cross-site request forgery.
package dashboard

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/accesstoken"
	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/store"
)

// The dashboard's paths.
const (
	PagePath   = "/"
	LoginPath  = "/dashboard/login"
	LogoutPath = "/dashboard/logout"
)

// DefaultSessionLifetime is how long a session lasts when
// Options.SessionLifetime is zero.
const DefaultSessionLifetime = 8 * time.Hour

// DefaultDays is the span of the history and completeness the page shows
// when Options.Days is zero.
const DefaultDays = 90

// loginMaxBody bounds the login form.
const loginMaxBody = 16 << 10

// Options configure a Dashboard.
type Options struct {
	// Tokens are the [[server.token]] sections; those with the admin
	// scope may see the page.
	Tokens []config.Token
	// SessionLifetime is how long a session lasts; zero means
	// DefaultSessionLifetime.
	SessionLifetime time.Duration
	// Days bounds the history and the completeness shown, ending today;
	// zero means DefaultDays.
	Days int
	// Clock is the time of status, sessions and the shown span; nil
	// means time.Now.
	Clock func() time.Time
	// Logger receives logins, refusals and failures, never a token; nil
	// logs nothing.
	Logger *slog.Logger
}

// A Dashboard serves the page over one store.
type Dashboard struct {
	s        Store
	sessions *accesstoken.Table
	o        Options
	log      *slog.Logger
}

// New returns the dashboard of s, its sessions kept in s's service tables.
func New(s *store.Store, o Options) *Dashboard {
	return newDashboard(s, accesstoken.New(s.ServiceDB()), o)
}

// newDashboard returns the dashboard of s, its sessions kept in sessions.
func newDashboard(s Store, sessions *accesstoken.Table, o Options) *Dashboard {
	if o.SessionLifetime <= 0 {
		o.SessionLifetime = DefaultSessionLifetime
	}
	if o.Days <= 0 {
		o.Days = DefaultDays
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Dashboard{s: s, sessions: sessions, o: o, log: log}
}

// Page serves the dashboard to an admin; a request without a session is
// sent to the login page (303), one with a wrong bearer token is refused.
func (d *Dashboard) Page(w http.ResponseWriter, r *http.Request) {
	tok, err := d.authenticate(r.Context(), r)
	var ref *refusal
	switch {
	case errors.Is(err, ErrNoSession):
		redirect(w, LoginPath)
		return
	case errors.As(err, &ref):
		d.log.Warn("dashboard: request refused", "reason", ref.msg, "remote", r.RemoteAddr)
		if ref.status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="meterstore"`)
		}
		d.errorPage(w, ref.status, ref.msg)
		return
	case err != nil:
		d.log.Error("dashboard: session lookup", "err", err)
		d.errorPage(w, http.StatusServiceUnavailable, "the session could not be checked: retry")
		return
	}
	v := d.collect(r.Context(), tok)
	render(w, http.StatusOK, pageTmpl, v)
}

// LoginForm serves the login form.
func (d *Dashboard) LoginForm(w http.ResponseWriter, _ *http.Request) {
	d.loginPage(w, http.StatusOK, "")
}

func (d *Dashboard) loginPage(w http.ResponseWriter, status int, msg string) {
	render(w, status, loginTmpl, struct{ Message, Action string }{msg, LoginPath})
}

func (d *Dashboard) errorPage(w http.ResponseWriter, status int, msg string) {
	render(w, status, errorTmpl, struct {
		Status  int
		Message string
		Login   string
	}{status, msg, LoginPath})
}

package dashboard

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/accesstoken"
	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/auth"
	"github.com/meterstore/meterstore/config"
)

// CookieName is the name of the session cookie.
const CookieName = "meterstore_session"

// sessionClientPrefix marks the access tokens that are dashboard
// sessions in the store's table of access tokens, which the catalog's
// OAuth2 tokens share: a session is recorded for "dashboard:<token name>",
// a name no configured token matches, so a session cookie is never a
// catalog bearer, and a catalog token is never a session.
const sessionClientPrefix = "dashboard:"

// ErrNoSession is the error of a request that carries no valid session
// and no bearer token.
var ErrNoSession = errors.New("dashboard: no session")

// A refusal is why a request with credentials was turned away.
type refusal struct {
	status int // 401 or 403
	msg    string
}

func (r *refusal) Error() string { return r.msg }

// authenticate returns the admin token a request carries: a bearer token
// in its Authorization header, for programs, or the session of its cookie.
// It returns ErrNoSession when the request carries neither (or a session
// that expired, was revoked, or whose token is gone or has another hash)
// and a *refusal for a bearer token that is wrong or lacks the admin
// scope.
func (d *Dashboard) authenticate(ctx context.Context, r *http.Request) (config.Token, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, presented, ok := strings.Cut(h, " ")
		presented = strings.TrimSpace(presented)
		if !ok || !strings.EqualFold(scheme, "Bearer") || presented == "" {
			return config.Token{}, &refusal{http.StatusUnauthorized, "the Authorization header is not a bearer token"}
		}
		t, ok := auth.Match(d.o.Tokens, presented)
		if !ok {
			return config.Token{}, &refusal{http.StatusUnauthorized, "the bearer token is not valid"}
		}
		if !auth.HasScope(t, config.ScopeAdmin) {
			return config.Token{}, &refusal{http.StatusForbidden, fmt.Sprintf("token %q lacks the scope: want %s", t.Name, config.ScopeAdmin)}
		}
		return t, nil
	}
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" {
		return config.Token{}, ErrNoSession
	}
	issuer, ok, err := d.sessions.Issuer(ctx, sha256.Sum256([]byte(c.Value)), d.o.Clock())
	if err != nil {
		return config.Token{}, err
	}
	name, isSession := strings.CutPrefix(issuer.Name, sessionClientPrefix)
	if !ok || !isSession {
		return config.Token{}, ErrNoSession
	}
	// The token is looked up again on every request, so that removing it
	// from the configuration, rotating its hash or taking its admin scope
	// ends its sessions.
	t, ok := auth.Issuer(d.o.Tokens, name, issuer.Hash)
	if !ok || !auth.HasScope(t, config.ScopeAdmin) {
		return config.Token{}, ErrNoSession
	}
	return t, nil
}

// newSession records a session for token t and returns the cookie's
// value: 32 bytes of crypto/rand, stored only as its SHA-256.
func (d *Dashboard) newSession(ctx context.Context, t config.Token) (string, time.Time, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", time.Time{}, fmt.Errorf("dashboard: a random session: %w", err)
	}
	v := base64.RawURLEncoding.EncodeToString(b)
	now := d.o.Clock()
	expires := now.Add(d.o.SessionLifetime)
	if err := d.sessions.Record(ctx, sha256.Sum256([]byte(v)), accesstoken.Issuer{Name: sessionClientPrefix + t.Name, Hash: t.Hash}, now, expires); err != nil {
		return "", time.Time{}, fmt.Errorf("dashboard: record session: %w", err)
	}
	return v, expires, nil
}

// Login checks the token of the login form, in constant time through
// auth.Match, and for an admin token starts a session: an HttpOnly,
// SameSite=Strict cookie (Secure over TLS) and a 303 to the page. A wrong
// token or one without the admin scope is answered 403 with the form again.
func (d *Dashboard) Login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, loginMaxBody)
	presented := strings.TrimSpace(r.PostFormValue("token"))
	t, ok := auth.Match(d.o.Tokens, presented)
	switch {
	case presented == "" || !ok:
		d.log.Warn("dashboard: login refused", "reason", "invalid", "remote", r.RemoteAddr)
		d.loginPage(w, http.StatusForbidden, "That token is not valid.")
		return
	case !auth.HasScope(t, config.ScopeAdmin):
		d.log.Warn("dashboard: login refused", "reason", "forbidden", "token", t.Name, "remote", r.RemoteAddr)
		d.loginPage(w, http.StatusForbidden, fmt.Sprintf("Token %q lacks the admin scope.", t.Name))
		return
	}
	v, expires, err := d.newSession(r.Context(), t)
	if err != nil {
		d.log.Error("dashboard: login", "err", err)
		d.loginPage(w, http.StatusServiceUnavailable, "The session could not be recorded; try again.")
		return
	}
	d.log.LogAttrs(r.Context(), slog.LevelInfo, "dashboard: login", slog.String("token", t.Name), slog.String("remote", r.RemoteAddr))
	http.SetCookie(w, d.cookie(r, v, expires))
	redirect(w, PagePath)
}

// Logout revokes the session of the request's cookie, clears the cookie
// and sends the browser to the login page.
func (d *Dashboard) Logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(CookieName); err == nil && c.Value != "" {
		if err := d.sessions.Revoke(r.Context(), sha256.Sum256([]byte(c.Value))); err != nil {
			d.log.Error("dashboard: logout", "err", err)
			d.loginPage(w, http.StatusServiceUnavailable, "The session could not be ended; try again.")
			return
		}
	}
	c := d.cookie(r, "", time.Unix(0, 0))
	c.MaxAge = -1
	http.SetCookie(w, c)
	redirect(w, LoginPath)
}

// cookie is the session cookie with value v until expires.
func (d *Dashboard) cookie(r *http.Request, v string, expires time.Time) *http.Cookie {
	return &http.Cookie{
		Name: CookieName, Value: v, Path: "/", Expires: expires.UTC(),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	}
}

// redirect answers 303 See Other to path, with a small HTML body.
func redirect(w http.ResponseWriter, path string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Location", path)
	w.WriteHeader(http.StatusSeeOther)
	fmt.Fprintf(w, "<!doctype html><a href=%q>%s</a>\n", path, path)
}

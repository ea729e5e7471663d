package dashboard

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func openStore(t *testing.T) *store.Store {
	t.Helper()
	dir := t.TempDir()
	src := fmt.Sprintf("[postgres]\nurl = %q\ndata_dir = %q\n[warehouse]\nurl = %q\n[[table]]\nname = \"power\"\nresolutions = [\"PT15M\"]\n",
		pgtest.NewDB(t), dir, "file://"+filepath.Join(dir, "wh"))
	cfg, err := config.Parse([]byte(src), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.OpenConfig(t.Context(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func tok(name string, scopes ...string) (config.Token, string) {
	text := "token-of-" + name + "-0123456789abcdef"
	return config.Token{Name: name, Hash: sha256.Sum256([]byte(text)), Scopes: scopes}, text
}

// serve sends a request to the dashboard's routes as httpapi mounts them.
func serve(d *Dashboard, r *http.Request) *httptest.ResponseRecorder {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", d.Page)
	mux.HandleFunc("GET "+LoginPath, d.LoginForm)
	mux.HandleFunc("POST "+LoginPath, d.Login)
	mux.HandleFunc("POST "+LogoutPath, d.Logout)
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, r)
	return w
}

func login(d *Dashboard, token string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", LoginPath, strings.NewReader(url.Values{"token": {token}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return serve(d, r)
}

func page(d *Dashboard, cookie *http.Cookie, bearer string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", "/", nil)
	if cookie != nil {
		r.AddCookie(cookie)
	}
	if bearer != "" {
		r.Header.Set("Authorization", "Bearer "+bearer)
	}
	return serve(d, r)
}

// TestSessions: the page sends a visitor without a session to the login
// page and never shows data; a wrong token or one without the admin scope
// gets no session; an admin token gets a cookie that opens the page until
// logout revokes it; a bearer token opens it for programs.
func TestSessions(t *testing.T) {
	s := openStore(t)
	if err := s.EnsurePartitions(t.Context(), time.Now()); err != nil {
		t.Fatal(err)
	}
	admin, adminTok := tok("ops", config.ScopeAdmin)
	reader, readerTok := tok("reporting", config.ScopeQuery)
	d := New(s, Options{Tokens: []config.Token{admin, reader}})

	w := page(d, nil, "")
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != LoginPath || strings.Contains(w.Body.String(), "power") {
		t.Fatalf("the page without a session: %d %v %q; want 303 to %s without data", w.Code, w.Header(), w.Body, LoginPath)
	}
	if w := serve(d, httptest.NewRequest("GET", LoginPath, nil)); w.Code != 200 || !strings.Contains(w.Body.String(), `name="token"`) {
		t.Errorf("the login form: %d %q", w.Code, w.Body)
	}
	for _, bad := range []string{"", adminTok + "x", readerTok} {
		w := login(d, bad)
		if w.Code != http.StatusForbidden || len(w.Result().Cookies()) != 0 {
			t.Errorf("login with %q: %d, cookies %v; want 403 without a cookie", bad, w.Code, w.Result().Cookies())
		}
	}
	if w := page(d, &http.Cookie{Name: CookieName, Value: "forged"}, ""); w.Code != http.StatusSeeOther {
		t.Errorf("the page with a forged session: %d; want 303", w.Code)
	}

	w = login(d, adminTok)
	cookies := w.Result().Cookies()
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != PagePath || len(cookies) != 1 {
		t.Fatalf("login as admin: %d %v", w.Code, w.Header())
	}
	c := cookies[0]
	if c.Name != CookieName || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure || c.Path != "/" ||
		len(c.Value) < 40 || !c.Expires.After(time.Now()) {
		t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, not Secure without TLS, a random value, an expiry", c)
	}
	w = page(d, c, "")
	body := w.Body.String()
	if w.Code != 200 || !strings.Contains(body, `data-table="power"`) || !strings.Contains(body, "<svg") {
		t.Fatalf("the page with the session: %d\n%s", w.Code, body)
	}
	if strings.Contains(body, "<script") || strings.Contains(body, "http://") && !strings.Contains(body, `xmlns="http://www.w3.org/2000/svg"`) {
		t.Errorf("the page loads or runs something")
	}
	if !strings.Contains(body, "intervals per balancing day") {
		t.Errorf("the page has no completeness chart:\n%s", body)
	}

	// A session is no bearer token, and the value is not stored.
	if w := page(d, nil, c.Value); w.Code != http.StatusUnauthorized {
		t.Errorf("the session as a bearer token: %d; want 401", w.Code)
	}
	if w := page(d, nil, adminTok); w.Code != 200 {
		t.Errorf("the page with an admin bearer token: %d", w.Code)
	}
	if w := page(d, nil, readerTok); w.Code != http.StatusForbidden {
		t.Errorf("the page with a query bearer token: %d; want 403", w.Code)
	}

	r := httptest.NewRequest("POST", LogoutPath, nil)
	r.AddCookie(c)
	w = serve(d, r)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != LoginPath {
		t.Fatalf("logout: %d %v", w.Code, w.Header())
	}
	if cs := w.Result().Cookies(); len(cs) != 1 || cs[0].MaxAge >= 0 {
		t.Errorf("logout cookies %v; want the session cleared", cs)
	}
	if w := page(d, c, ""); w.Code != http.StatusSeeOther {
		t.Errorf("the page with a session after logout: %d; want 303", w.Code)
	}

	// A session expires, and ends with its token's hash and admin scope.
	c2 := login(d, adminTok).Result().Cookies()[0]
	later := New(s, Options{Tokens: []config.Token{admin}, Clock: func() time.Time { return time.Now().Add(DefaultSessionLifetime + time.Minute) }})
	if w := page(later, c2, ""); w.Code != http.StatusSeeOther {
		t.Errorf("an expired session: %d; want 303", w.Code)
	}
	rotated := admin
	rotated.Hash[0] ^= 1
	if w := page(New(s, Options{Tokens: []config.Token{rotated}}), c2, ""); w.Code != http.StatusSeeOther {
		t.Errorf("a session of a token whose hash was rotated: %d; want 303", w.Code)
	}
	if w := page(New(s, Options{Tokens: []config.Token{admin}}), c2, ""); w.Code != 200 {
		t.Errorf("the session with its token unchanged: %d; want 200", w.Code)
	}
	admin.Scopes = []string{config.ScopeQuery}
	narrowed := New(s, Options{Tokens: []config.Token{admin}})
	if w := page(narrowed, c2, ""); w.Code != http.StatusSeeOther {
		t.Errorf("a session of a token that lost the admin scope: %d; want 303", w.Code)
	}
}

// TestChartsEscape: the text of a chart is escaped.
func TestChartsEscape(t *testing.T) {
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	got := string(barChart(`<b>"rows"</b>`, "r&s", []point{{day, 3}, {day.Add(24 * time.Hour), 5}}, colorRows))
	if strings.Contains(got, "<b>") || !strings.Contains(got, "&lt;b&gt;") || strings.Count(got, "<rect") != 2 {
		t.Errorf("chart:\n%s", got)
	}
	if got := string(lineChart("lag", "days", nil)); !strings.Contains(got, "no data") {
		t.Errorf("empty chart:\n%s", got)
	}
}

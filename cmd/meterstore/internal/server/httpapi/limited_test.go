package httpapi

import (
	"context"
	"fmt"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/store"
)

// TestLimitedTokenHealthAndMetrics: an admin token limited to gas learns
// nothing of power from GET /readyz (power unhealthy: 200, power not
// named) or GET /metrics (no series labelled power, nor the catalog's
// registry), while it sees gas's series and the process's own, which name
// no table; an unlimited admin token sees both tables.
func TestLimitedTokenHealthAndMetrics(t *testing.T) {
	mp, exposition, err := Prometheus()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	// Partitions ahead: gas keeps 40 days of them, power one.
	s := openTables(t, "[[table]]\nname = \"power\"\nresolutions = [\"PT15M\"]\nheadroom = \"1d\"\n"+
		"[[table]]\nname = \"gas\"\nresolutions = [\"PT15M\"]\nheadroom = \"40d\"\n", store.WithMeters(mp))
	ops, opsTok := token(t, "ops", config.ScopeAdmin)
	gasOps, gasTok := token(t, "gas-ops", config.ScopeAdmin)
	gasOps.Tables = []string{"gas"}
	now := time.Now()
	h, err := New(s, Options{Tokens: []config.Token{ops, gasOps}, Meters: mp, Metrics: exposition, Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	// Partitions made 30 days ago: power has none left ahead, gas has.
	if err := s.EnsurePartitions(t.Context(), now.AddDate(0, 0, -30)); err != nil {
		t.Fatal(err)
	}
	code, body, _ := call(t, h, "GET", "/readyz", opsTok)
	if code != 503 || !strings.Contains(fmt.Sprint(body["unhealthy_tables"]), "power") || strings.Contains(fmt.Sprint(body["unhealthy_tables"]), "gas") {
		t.Fatalf("readyz for every table: %d %v; want 503 naming power alone", code, body)
	}
	code, body, _ = call(t, h, "GET", "/readyz", gasTok)
	if code != 200 || body["status"] != "ready" || strings.Contains(fmt.Sprint(body), "power") {
		t.Errorf("readyz for gas alone: %d %v; want 200, power not named", code, body)
	}

	exposed := func(tok string) string {
		r := httptest.NewRequest("GET", "/metrics", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 200 {
			t.Fatalf("metrics: %d %s", w.Code, w.Body)
		}
		return w.Body.String()
	}
	all, gas := exposed(opsTok), exposed(gasTok)
	for _, want := range []string{`meterstore_table_healthy{[^}]*table="power"`, `meterstore_table_healthy{[^}]*table="gas"`} {
		if !regexp.MustCompile(want).MatchString(all) {
			t.Errorf("the unlimited exposition has no %s", want)
		}
	}
	for _, want := range []string{`meterstore_table_healthy{[^}]*table="gas"`, `(?m)^go_goroutines `, `meterstore_http_requests_total{[^}]*route="/readyz"`} {
		if !regexp.MustCompile(want).MatchString(gas) {
			t.Errorf("gas's exposition has no %s", want)
		}
	}
	for _, not := range []string{`table="power"`, `table="<registry>"`, "power"} {
		if strings.Contains(gas, not) {
			t.Errorf("gas's exposition shows %s:\n%s", not, grepLines(gas, not))
		}
	}
}

// grepLines returns the lines of text that contain s.
func grepLines(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

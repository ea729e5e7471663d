package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The failure matrix of docs/operations.md ("When a tier is away"), row by
// row through the command line: what works and what fails, with which
// exit status, while the warehouse is away and while PostgreSQL is.

// degradedDeployment archives March 1 and 2 of two meters and delivers
// March 17 above W, with the catalog's log on log ("postgres" or
// "object_store"). It returns the deployment's -c flags and directory.
func degradedDeployment(t *testing.T, log string) ([]string, string, string) {
	t.Helper()
	dir := t.TempDir()
	cfgPath, _ := deploymentConfig(t, dir)
	editConfig(t, cfgPath, `log = "postgres"`, `log = "`+log+`"`)
	c := []string{"-c", cfgPath}
	mustRun(t, append([]string{"create", "--now", "2026-03-01T00:00:00Z"}, c...)...)
	day1 := deliveryCSV(2, -1)
	day2 := strings.ReplaceAll(strings.ReplaceAll(day1, "2026-03-02T", "2026-03-03T"), "2026-03-01T", "2026-03-02T")
	// Day 2 carries a pseudonymous subject reference, as a delivery of a
	// registered subject does.
	lines := strings.Split(strings.TrimSuffix(day2, "\n"), "\n")
	lines[0] += ",subject_id"
	for i := 1; i < len(lines); i++ {
		lines[i] += ",p-4711"
	}
	day2 = strings.Join(lines, "\n") + "\n"
	for i, csv := range []string{day1, day2} {
		p := filepath.Join(dir, []string{"day1.csv", "day2.csv"}[i])
		if err := os.WriteFile(p, []byte(csv), 0o644); err != nil {
			t.Fatal(err)
		}
		mustRun(t, append([]string{"ingest", "--table", "power", p}, c...)...)
	}
	mustRun(t, append([]string{"archive", "--now", "2026-04-20T00:00:00Z"}, c...)...)
	return c, cfgPath, dir
}

// countOf runs query and returns its single value.
func countOf(t *testing.T, out string) string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) == "n" && i+1 < len(lines) {
			return strings.TrimSpace(lines[i+1])
		}
	}
	return ""
}

// hotCSV is a delivery of March 20, above W.
func hotCSV(t *testing.T, dir, name string, below bool) string {
	t.Helper()
	csv := strings.ReplaceAll(strings.ReplaceAll(deliveryCSV(1, -1), "2026-03-02T", "2026-03-21T"), "2026-03-01T", "2026-03-20T")
	if below {
		// One version more of March 1, below W.
		csv += strings.Split(strings.ReplaceAll(deliveryCSV(1, -1), "20260302000000", "20260303000000"), "\n")[1] + "\n"
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestWarehouseAway: with the warehouse directory moved away (an empty
// one in its place, as an unmounted volume leaves), on either catalog
// log, deliveries above W are stored (exit 0) and one with a row below W
// is refused retryably (75), an operational read answers (0), a read of
// both tiers, a historical read and archival fail retryably (75), and
// status exits 1 showing the ledger's W. Back, every command works.
func TestWarehouseAway(t *testing.T) {
	for _, log := range []string{"postgres", "object_store"} {
		t.Run(log, func(t *testing.T) {
			c, _, dir := degradedDeployment(t, log)
			wh := filepath.Join(dir, "wh")
			if err := os.Rename(wh, wh+".away"); err != nil {
				t.Fatal(err)
			}
			q := func(mode ...string) []string {
				return append(append([]string{"query", "--table", "power"}, mode...), append([]string{"SELECT count(*) AS n FROM readings"}, c...)...)
			}
			code := func(what string, want int, args ...string) string {
				t.Helper()
				out, got := run(t, args...)
				if got != want {
					t.Errorf("%s with the warehouse away: exit %d, want %d\n%s", what, got, want, out)
				}
				return out
			}
			code("ingest above W", 0, append([]string{"ingest", "--table", "power", hotCSV(t, dir, "hot.csv", false)}, c...)...)
			code("ingest below W", exitRetryable, append([]string{"ingest", "--table", "power", hotCSV(t, dir, "late.csv", true)}, c...)...)
			if out := code("query --operational", 0, q("--operational")...); countOf(t, out) != "96" {
				t.Errorf("query --operational with the warehouse away: want the 96 hot readings\n%s", out)
			}
			code("query", exitRetryable, q()...)
			code("query --historical", exitRetryable, q("--historical")...)
			code("archive", exitRetryable, append([]string{"archive", "--now", "2026-05-20T00:00:00Z"}, c...)...)
			if out := code("status", exitPermanent, append([]string{"status", "--now", "2026-03-19T00:00:00Z"}, c...)...); !strings.Contains(out, "(ledger)") || !strings.Contains(out, "cold tier") {
				t.Errorf("status with the warehouse away shows no watermark of the ledger or no cause:\n%s", out)
			}
			if files, _ := os.ReadDir(wh); len(files) > 0 {
				t.Errorf("a command wrote into the empty warehouse: %v", files)
			}

			if err := os.RemoveAll(wh); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(wh+".away", wh); err != nil {
				t.Fatal(err)
			}
			mustRun(t, append([]string{"ingest", "--table", "power", filepath.Join(dir, "late.csv")}, c...)...)
			if out := mustRun(t, q()...); countOf(t, out) != "480" {
				t.Errorf("query once the warehouse is back: want 4 days of 2 meters and 1 of 1\n%s", out)
			}
			// gas, never delivered to, has no partition ahead: power's row
			// decides.
			out, _ := run(t, append([]string{"status", "--now", "2026-03-19T00:00:00Z"}, c...)...)
			for _, l := range strings.Split(out, "\n") {
				if f := strings.Fields(l); len(f) > 6 && f[0] == "power" && (f[6] != "true" || strings.Contains(l, "(ledger)")) {
					t.Errorf("status of power once the warehouse is back:\n%s", out)
				}
			}
		})
	}
}

// TestPostgresAway: with the catalog's log on the object store and
// postgres.url naming a server that refuses connections, a historical read
// answers (0) from the cold tier, the subject registry left alone; a read
// of both tiers, an operational one, a delivery and archival fail
// retryably (75).
func TestPostgresAway(t *testing.T) {
	c, cfgPath, dir := degradedDeployment(t, "object_store")
	text, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var url string
	for _, l := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(l, "url = \"postgres") {
			url = l
		}
	}
	if url == "" {
		t.Fatal("no postgres url in the configuration")
	}
	editConfig(t, cfgPath, url, `url = "postgres://meterstore@127.0.0.1:1/none?connect_timeout=5"`)
	q := func(mode ...string) []string {
		return append(append([]string{"query", "--table", "power"}, mode...), append([]string{"SELECT count(*) AS n FROM readings"}, c...)...)
	}
	code := func(what string, want int, args ...string) string {
		t.Helper()
		out, got := run(t, args...)
		if got != want {
			t.Errorf("%s with PostgreSQL away: exit %d, want %d\n%s", what, got, want, out)
		}
		return out
	}
	if out := code("query --historical", 0, q("--historical")...); countOf(t, out) != "384" {
		t.Errorf("query --historical with PostgreSQL away: want the 384 cold readings\n%s", out)
	}
	// Readings carry pseudonyms only, returned as stored: a read needs no
	// registry, and none can lead from one back to an erased subject,
	// whose link went with the registry's row.
	subjects := append([]string{"query", "--table", "power", "--historical",
		"SELECT count(*) AS n FROM readings WHERE subject_id = 'p-4711'"}, c...)
	if out := code("query --historical of a subject", 0, subjects...); countOf(t, out) != "192" {
		t.Errorf("query --historical of the pseudonym p-4711: want its 192 readings\n%s", out)
	}
	code("query", exitRetryable, q()...)
	code("query --operational", exitRetryable, q("--operational")...)
	code("ingest", exitRetryable, append([]string{"ingest", "--table", "power", hotCSV(t, dir, "hot.csv", false)}, c...)...)
	code("archive", exitRetryable, append([]string{"archive", "--now", "2026-05-20T00:00:00Z"}, c...)...)
	code("status", exitRetryable, append([]string{"status", "--now", "2026-03-19T00:00:00Z"}, c...)...)
}

// serveAway starts serve on the deployment of degradedDeployment with a
// token of every scope once away() has taken a tier away, and returns a
// function that asks it: method, path and body give the status code and
// the body's text.
func serveAway(t *testing.T, cfgPath, dir string, away func()) func(method, path, ctype, body string) (int, string) {
	t.Helper()
	bin := buildBinary(t, dir)
	tok, section := parseToken(t, mustRun(t, "token", "--name", "ops", "--scope", "ingest,query,admin"))
	editConfig(t, cfgPath, `listen = "127.0.0.1:8080"`, `listen = "127.0.0.1:0"`)
	text, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, append(text, []byte("\n"+section)...), 0o644); err != nil {
		t.Fatal(err)
	}
	away()
	p := startServe(t, bin, cfgPath)
	c := newAPIClient(p.base, tok)
	return func(method, path, ctype, body string) (int, string) {
		t.Helper()
		resp, err := c.do(t.Context(), method, path, ctype, strings.NewReader(body))
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if resp.StatusCode == 503 && path != "/readyz" && resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s %s: 503 without Retry-After", method, path)
		}
		return resp.StatusCode, string(b)
	}
}

// queryBody is POST /v1/query's body counting power's readings in mode.
func queryBody(mode string) string {
	return `{"sql": "SELECT count(*) AS n FROM readings", "table": "power", "mode": "` + mode + `"}`
}

// TestServeWarehouseAway: a serve started while the warehouse is away is
// live and not ready; it takes deliveries above W, answers operational
// reads, refuses a late correction, a read of both tiers and a historical
// one with 503 and Retry-After, and its status shows the ledger's W.
func TestServeWarehouseAway(t *testing.T) {
	_, cfgPath, dir := degradedDeployment(t, "postgres")
	wh := filepath.Join(dir, "wh")
	ask := serveAway(t, cfgPath, dir, func() {
		if err := os.Rename(wh, wh+".away"); err != nil {
			t.Fatal(err)
		}
	})
	expectAway(t, ask, "the warehouse away", []awayCase{
		{"liveness", "GET", "/healthz", "", "", 200, ""},
		{"readiness", "GET", "/readyz", "", "", 503, ""},
		{"a delivery above W", "POST", "/v1/tables/power/readings", "text/csv", readFile(t, hotCSV(t, dir, "hot.csv", false)), 200, ""},
		{"a delivery with a late correction", "POST", "/v1/tables/power/readings", "text/csv", readFile(t, hotCSV(t, dir, "late.csv", true)), 503, "cold tier"},
		{"an operational read", "POST", "/v1/query", "application/json", queryBody("operational"), 200, "96"},
		{"a read of both tiers", "POST", "/v1/query", "application/json", queryBody("auto"), 503, "cold tier"},
		{"a historical read", "POST", "/v1/query", "application/json", queryBody("historical"), 503, "cold tier"},
		{"status", "GET", "/v1/status", "", "", 200, `"watermark_source":"ledger"`},
	})
}

// TestServePostgresAway: a serve started while PostgreSQL refuses
// connections, with the catalog's log on the object store, is live and
// not ready; it answers historical reads, and refuses deliveries and
// reads that need PostgreSQL with 503 and Retry-After.
func TestServePostgresAway(t *testing.T) {
	_, cfgPath, dir := degradedDeployment(t, "object_store")
	ask := serveAway(t, cfgPath, dir, func() {
		text, err := os.ReadFile(cfgPath)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(text), "\n") {
			if strings.HasPrefix(l, "url = \"postgres") {
				editConfig(t, cfgPath, l, `url = "postgres://meterstore@127.0.0.1:1/none?connect_timeout=5"`)
			}
		}
	})
	expectAway(t, ask, "PostgreSQL away", []awayCase{
		{"liveness", "GET", "/healthz", "", "", 200, ""},
		{"readiness", "GET", "/readyz", "", "", 503, ""},
		{"a delivery", "POST", "/v1/tables/power/readings", "text/csv", readFile(t, hotCSV(t, dir, "hot.csv", false)), 503, ""},
		{"an operational read", "POST", "/v1/query", "application/json", queryBody("operational"), 503, ""},
		{"a read of both tiers", "POST", "/v1/query", "application/json", queryBody("auto"), 503, ""},
		{"a historical read", "POST", "/v1/query", "application/json", queryBody("historical"), 200, "384"},
	})
}

// An awayCase is a request to a serve with a tier away and the answer it
// must get: the status, and a text the body holds.
type awayCase struct {
	what, method, path, ctype, body string
	want                            int
	has                             string
}

// expectAway asks each case of ask, a serve with what away, and fails t
// for every answer that is not the case's.
func expectAway(t *testing.T, ask func(method, path, ctype, body string) (int, string), what string, cases []awayCase) {
	t.Helper()
	for _, c := range cases {
		if code, body := ask(c.method, c.path, c.ctype, c.body); code != c.want || !strings.Contains(body, c.has) {
			t.Errorf("%s with %s: %d, want %d with %q\n%s", c.what, what, code, c.want, c.has, body)
		}
	}
}

// readFile returns the text of the file at p.
func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

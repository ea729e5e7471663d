package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/store"
)

// TestIngestProvenance: a table declared with provenance = true records a
// CSV body as api with the caller's X-MeterStore-Source, keeps it when the
// same readings come again under another source (present), and records an
// MSCONS interchange with its UNB and UNH references; every answer
// conforms to the OpenAPI document.
func TestIngestProvenance(t *testing.T) {
	d := parseOpenAPI(t)
	dir := t.TempDir()
	src := fmt.Sprintf(`
[postgres]
url = %q
data_dir = %q
[warehouse]
url = %q
[[table]]
name = "power"
resolutions = ["PT15M"]
provenance = true
`, pgtest.NewDB(t), dir, "file://"+filepath.Join(dir, "wh"))
	cfg, err := config.Parse([]byte(src), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.OpenConfig(t.Context(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	now := time.Now().UTC()
	day := now.Truncate(24 * time.Hour)
	if err := s.EnsurePartitions(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	loader, tok := token(t, "loader", config.ScopeIngest)
	h, err := New(s, Options{Tokens: []config.Token{loader}})
	if err != nil {
		t.Fatal(err)
	}
	send := func(query, ct, source, body string) map[string]any {
		t.Helper()
		r := httptest.NewRequest("POST", "/v1/tables/power/readings"+query, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+tok)
		r.Header.Set("Content-Type", ct)
		if source != "" {
			r.Header.Set(sourceHeader, source)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		d.conforms(t, "POST", ingestPath, w)
		var out map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || w.Code != 200 {
			t.Fatalf("%d %q: %v", w.Code, w.Body, err)
		}
		return out
	}
	csv := readingsCSV(day, 4, 0)
	if out := send("", "text/csv", "monday.csv", csv); out["inserted"] != 4.0 {
		t.Fatalf("first delivery: %v", out)
	}
	if out := send("?source=tuesday.csv", "text/csv", "ignored.csv", csv); out["present"] != 4.0 {
		t.Fatalf("the same readings from another source: %v", out)
	}
	edi := msconsInterchange(msconsMessage("M1", day.Add(2*time.Hour), 2, "220"), msconsMessage("M2", day.Add(3*time.Hour), 2, "220"))
	if out := send("", "application/EDIFACT", "ignored.edi", edi); out["inserted"] != 4.0 {
		t.Fatalf("interchange: %v", out)
	}
	res, err := s.Query(t.Context(), "power", `SELECT source_kind, source_ref, count(*) FROM readings GROUP BY ALL ORDER BY source_ref`)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(res.Rows); got != "[[mscons IC:M1 2] [mscons IC:M2 2] [api monday.csv 4]]" {
		t.Fatalf("sources %s", got)
	}
}

// TestIdempotencyOptions: a retry under an Idempotency-Key is replayed
// only with the body and the options it was sent with (substitute_by,
// the source); the same body with other options is another request.
func TestIdempotencyOptions(t *testing.T) {
	d := parseOpenAPI(t)
	s := openStore(t) // power has no substituted_by: substitutes are refused
	now := time.Now().UTC()
	if err := s.EnsurePartitions(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	loader, tok := token(t, "loader", config.ScopeIngest)
	h, err := New(s, Options{Tokens: []config.Token{loader}})
	if err != nil {
		t.Fatal(err)
	}
	body := readingsCSV(now.Truncate(24*time.Hour), 4, 0)
	send := func(key, query, source string) (int, string, bool) {
		t.Helper()
		r := httptest.NewRequest("POST", "/v1/tables/power/readings"+query, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+tok)
		r.Header.Set("Content-Type", "text/csv")
		r.Header.Set(idempotencyHeader, key)
		if source != "" {
			r.Header.Set(sourceHeader, source)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		d.conforms(t, "POST", ingestPath, w)
		var out struct{ Code string }
		json.Unmarshal(w.Body.Bytes(), &out)
		return w.Code, out.Code, w.Header().Get(replayedHeader) == "true"
	}
	for _, c := range []struct {
		what, key, query, source string
		code                     int
		errCode                  string
		replayed                 bool
	}{
		{"substitutes refused", "k-1", "?substitute_by=9900000000012", "", 422, "refused", false},
		{"the same without substitute_by", "k-1", "", "", 422, "idempotency_key_reused", false},
		{"the same again", "k-1", "?substitute_by=9900000000012", "", 422, "refused", true},
		{"a plain delivery", "k-2", "", "", 200, "", false},
		{"its retry", "k-2", "", "", 200, "", true},
		{"with a source", "k-2", "", "monday.csv", 422, "idempotency_key_reused", false},
		{"with a source as a parameter", "k-2", "?source=monday.csv", "", 422, "idempotency_key_reused", false},
	} {
		if code, errCode, replayed := send(c.key, c.query, c.source); code != c.code || errCode != c.errCode || replayed != c.replayed {
			t.Errorf("%s: %d %q replayed %t; want %d %q %t", c.what, code, errCode, replayed, c.code, c.errCode, c.replayed)
		}
	}
}

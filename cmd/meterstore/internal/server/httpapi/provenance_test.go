package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/store"
)

// ingestClient posts deliveries to power with a loader's token and checks
// each answer against the OpenAPI document.
type ingestClient struct {
	t   *testing.T
	h   http.Handler
	d   *oaDoc
	tok string
}

// newIngestClient serves s with a handler that knows one token of scope
// ingest, with today's partitions created.
func newIngestClient(t *testing.T, s *store.Store) *ingestClient {
	t.Helper()
	if err := s.EnsurePartitions(t.Context(), time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	loader, tok := token(t, "loader", config.ScopeIngest)
	h, err := New(s, Options{Tokens: []config.Token{loader}})
	if err != nil {
		t.Fatal(err)
	}
	return &ingestClient{t: t, h: h, d: parseOpenAPI(t), tok: tok}
}

// post sends body of Content-Type ct to power's readings with query, the
// source header and the Idempotency-Key key (each "" for none).
func (c *ingestClient) post(query, ct, source, key, body string) *httptest.ResponseRecorder {
	c.t.Helper()
	r := httptest.NewRequest("POST", "/v1/tables/power/readings"+query, strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+c.tok)
	r.Header.Set("Content-Type", ct)
	if source != "" {
		r.Header.Set(sourceHeader, source)
	}
	if key != "" {
		r.Header.Set(idempotencyHeader, key)
	}
	w := httptest.NewRecorder()
	c.h.ServeHTTP(w, r)
	c.d.conforms(c.t, "POST", ingestPath, w)
	return w
}

// TestIngestProvenance: a table declared with provenance = true records a
// CSV body as api with the caller's X-MeterStore-Source, keeps it when the
// same readings come again under another source (present), and records an
// MSCONS interchange with its UNB and UNH references.
func TestIngestProvenance(t *testing.T) {
	s := openTables(t, "[[table]]\nname = \"power\"\nresolutions = [\"PT15M\"]\nprovenance = true\n")
	c := newIngestClient(t, s)
	send := func(query, ct, source, body string) map[string]any {
		t.Helper()
		w := c.post(query, ct, source, "", body)
		var out map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || w.Code != 200 {
			t.Fatalf("%d %q: %v", w.Code, w.Body, err)
		}
		return out
	}
	day := time.Now().UTC().Truncate(24 * time.Hour)
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
	c := newIngestClient(t, openStore(t)) // power has no substituted_by: substitutes are refused
	body := readingsCSV(time.Now().UTC().Truncate(24*time.Hour), 4, 0)
	for _, tc := range []struct {
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
		w := c.post(tc.query, "text/csv", tc.source, tc.key, body)
		var out struct{ Code string }
		json.Unmarshal(w.Body.Bytes(), &out)
		if replayed := w.Header().Get(replayedHeader) == "true"; w.Code != tc.code || out.Code != tc.errCode || replayed != tc.replayed {
			t.Errorf("%s: %d %q replayed %t; want %d %q %t", tc.what, w.Code, out.Code, replayed, tc.code, tc.errCode, tc.replayed)
		}
	}
}

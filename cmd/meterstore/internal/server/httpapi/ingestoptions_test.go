package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestIngestOptionsRefused: the source (header or query parameter) and
// substitute_by are refused before the body is read, naming the field: a
// control character or NUL (%00, which PostgreSQL answered with its raw
// encoding error) or more than 1024 bytes is 422, an empty substitute_by
// (which wrote the readings as measured values) is 422, and a field sent
// twice is 400. Nothing of a refused request is stored; 1024 bytes pass.
func TestIngestOptionsRefused(t *testing.T) {
	s := openTables(t, "[[table]]\nname = \"power\"\nresolutions = [\"PT15M\"]\nprovenance = true\n[[table.column]]\nname = \"substituted_by\"\n")
	c := newIngestClient(t, s)
	body := readingsCSV(time.Now().UTC().Truncate(24*time.Hour), 4, 0)
	long := strings.Repeat("x", 100<<10)
	for _, tc := range []struct {
		what, query, source string
		code                int
		want                []string
	}{
		{"NUL as a parameter", "?source=%00", "", 422, []string{"query parameter source", "U+0000"}},
		{"escape sequence as a parameter", "?source=" + url.QueryEscape("a\x1b[2Jb"), "", 422, []string{"query parameter source", "U+001B"}},
		{"100 KB header", "", long, 422, []string{"header X-MeterStore-Source", "102400 bytes"}},
		{"tab in the header", "", "a\tb", 422, []string{"header X-MeterStore-Source", "U+0009"}},
		{"invalid UTF-8 in the header", "", "a\xffb", 422, []string{"header X-MeterStore-Source", "UTF-8"}},
		{"empty substitute_by", "?substitute_by=", "", 422, []string{"query parameter substitute_by", "empty"}},
		{"line break in substitute_by", "?substitute_by=99%0A", "", 422, []string{"query parameter substitute_by", "U+000A"}},
		{"substitute_by twice", "?substitute_by=9900000000012&substitute_by=9900000000029", "", 400, []string{"substitute_by sent 2 times"}},
		{"source twice", "?source=a.csv&source=b.csv", "", 400, []string{"source sent 2 times"}},
	} {
		w := c.post(tc.query, "text/csv", tc.source, "", body)
		var out struct{ Error, Code string }
		json.Unmarshal(w.Body.Bytes(), &out)
		for _, want := range tc.want {
			if w.Code != tc.code || !strings.Contains(out.Error, want) {
				t.Errorf("%s: %d %s; want %d naming %q", tc.what, w.Code, out.Error, tc.code, want)
			}
		}
		if len(out.Error) > 1000 {
			t.Errorf("%s: an error of %d bytes", tc.what, len(out.Error))
		}
	}
	// Two headers, which httptest's client would join.
	r := httptest.NewRequest("POST", "/v1/tables/power/readings", strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+c.tok)
	r.Header.Set("Content-Type", "text/csv")
	r.Header.Add(sourceHeader, "a.csv")
	r.Header.Add(sourceHeader, "b.csv")
	w := httptest.NewRecorder()
	c.h.ServeHTTP(w, r)
	if w.Code != 400 || !strings.Contains(w.Body.String(), "sent 2 times") {
		t.Errorf("two source headers: %d %s", w.Code, w.Body)
	}
	res, err := s.Query(t.Context(), "power", `SELECT count(*) FROM readings_versions`)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.Rows) != "[[0]]" {
		t.Fatalf("refused requests stored readings: %v", res.Rows)
	}
	ref := strings.Repeat("é", 512)
	if w := c.post("", "text/csv", ref, "", body); w.Code != 200 {
		t.Fatalf("a source of 1024 bytes: %d %s", w.Code, w.Body)
	}
	res, err = s.Query(t.Context(), "power", `SELECT DISTINCT source_ref FROM readings`)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.Rows) != "[["+ref+"]]" {
		t.Fatalf("the source stored: %.80v", res.Rows)
	}
}

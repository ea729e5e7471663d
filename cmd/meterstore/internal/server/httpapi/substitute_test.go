package httpapi

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/config"
)

// TestIngestSubstitutes posts substitute values (quality 67, no version)
// with substitute_by over stored readings of a higher version: they are
// superseding and win. Without the column substituted_by the same request
// is refused and writes nothing.
func TestIngestSubstitutes(t *testing.T) {
	s := openTables(t, `
[[table]]
name = "power"
resolutions = ["PT15M"]
[[table.column]]
name = "substituted_by"
[[table]]
name = "plain"
resolutions = ["PT15M"]
`)
	now := time.Now().UTC()
	day := now.Truncate(24 * time.Hour)
	if err := s.EnsurePartitions(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	loader, tok := token(t, "loader", config.ScopeIngest)
	hh, err := New(s, Options{Tokens: []config.Token{loader}})
	if err != nil {
		t.Fatal(err)
	}
	// Stored under version 20260402100000, then substituted.
	measured := strings.ReplaceAll(readingsCSV(day, 4, 0), ",220,PT15M,1,", ",220,PT15M,20260402100000,")
	subs := strings.NewReplacer(",220,PT15M,20260402100000,", ",67,PT15M,0,", ".250,", ".750,").Replace(measured)
	for _, table := range []string{"power", "plain"} {
		path := "/v1/tables/" + table + "/readings"
		if code, out, _ := post(t, hh, path, tok, "text/csv", strings.NewReader(measured)); code != 200 || out["inserted"] != 4.0 {
			t.Fatalf("%s: measured values: %d %v", table, code, out)
		}
		code, out, _ := post(t, hh, path+"?substitute_by=9900000000012", tok, "text/csv", strings.NewReader(subs))
		if table == "plain" {
			if code != 422 || !strings.Contains(fmt.Sprint(out["error"]), "substituted_by") || out["superseded"] != 0.0 {
				t.Fatalf("plain: substitutes without the column: %d %v", code, out)
			}
			continue
		}
		if code != 200 || out["superseded"] != 4.0 || out["inserted"] != 0.0 {
			t.Fatalf("substitutes: %d %v", code, out)
		}
	}
	res, err := s.Query(t.Context(), "power", `SELECT sum(value)::VARCHAR, min(version)::VARCHAR, min(quality), min(substituted_by) FROM readings`)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(res.Rows); got != "[[9.000000 20260402100001 67 9900000000012]]" {
		t.Fatalf("resolved readings %s", got)
	}
	res, err = s.Query(t.Context(), "plain", `SELECT count(*) FROM readings_versions`)
	if err != nil || fmt.Sprint(res.Rows) != "[[4]]" {
		t.Fatalf("plain after the refused substitutes: %v %v", res, err)
	}
}

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meterstore/meterstore/internal/pgtest"
)

// TestBenchServePortal runs `bench serve --portal` tiny, the built command
// serving itself: it must print the portal workload's three cases and
// write its ratio and its p99 under ingest to the JSON.
func TestBenchServePortal(t *testing.T) {
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	jsonPath := filepath.Join(dir, "serve.json")
	out, err := exec.CommandContext(t.Context(), bin, "bench", "serve", "--portal", "--portal-clients", "2", "--pg-url", pgtest.NewDB(t),
		"--meters", "60", "--batch", "20", "--ingest-clients", "1", "--query-clients", "0", "--rounds", "1", "--query-for", "1s",
		"--json", jsonPath).CombinedOutput()
	if err != nil {
		t.Fatalf("bench serve --portal: %v\n%s", err, out)
	}
	for _, want := range []string{"typed HTTP, alone", "PostgreSQL alone, pgx prepared", "typed HTTP, under ingest load",
		"portal: typed answers/s over PostgreSQL's"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("no %q in\n%s", want, out)
		}
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Ratio  float64 `json:"portal_qps_vs_postgres"`
		P99    float64 `json:"portal_p99_ms_under_ingest"`
		Portal []struct {
			Answers int   `json:"answers"`
			Errors  int   `json:"errors"`
			Rows    int64 `json:"rows_per_answer"`
		} `json:"portal"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Ratio <= 0 || res.P99 <= 0 || len(res.Portal) != 3 {
		t.Fatalf("portal JSON: %s", b)
	}
	for _, p := range res.Portal {
		if p.Answers == 0 || p.Errors != 0 || p.Rows != 96 {
			t.Errorf("portal case %+v in %s", p, b)
		}
	}
}

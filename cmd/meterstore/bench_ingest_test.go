package main

import (
	"strings"
	"testing"

	"github.com/meterstore/meterstore/internal/pgtest"
)

// TestBenchIngestFormat runs `bench ingest --format mscons` tiny on the
// test server: it must report the ratio and that both formats stored the
// same readings; an unknown format is refused before any server starts.
func TestBenchIngestFormat(t *testing.T) {
	out := mustRun(t, "bench", "ingest", "--format", "mscons", "--pg-url", pgtest.NewDB(t), "--meters", "30", "--batch", "10")
	for _, want := range []string{"2976 readings (30 meters, 3% corrected) in 4 batches", "ingest CSV", "ingest MSCONS",
		"ingest MSCONS / ingest CSV: ", "both stored the same readings", `"mscons_to_csv": `} {
		if !strings.Contains(out, want) {
			t.Fatalf("no %q in\n%s", want, out)
		}
	}
	out, code := run(t, "bench", "ingest", "--format", "xml", "--pg-url", "postgres://127.0.0.1:1/none")
	if code != exitPermanent || !strings.Contains(out, `--format "xml": want mscons`) {
		t.Fatalf("--format xml: exit %d\n%s", code, out)
	}
}

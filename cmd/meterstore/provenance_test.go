package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meterstore/meterstore/metering"
)

// TestIngestProvenance: with provenance = true, meterstore ingest records
// a CSV file as csv with its name, the same file again under another name
// is present and keeps the first, and an MSCONS interchange records each
// message's UNB and UNH references.
func TestIngestProvenance(t *testing.T) {
	cfgPath, dir := msconsDeployment(t)
	text, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, []byte(strings.Replace(string(text), "provenance = false", "provenance = true", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	c := []string{"-c", cfgPath}
	mustRun(t, append([]string{"create", "--now", "2026-03-01T00:00:00Z"}, c...)...)
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	delivery := deliveryCSV(1, 0)
	monday, tuesday := write("monday.csv", delivery), write("tuesday.csv", delivery)
	mustRun(t, append([]string{"ingest", "--table", "power", monday}, c...)...)
	if out := mustRun(t, append([]string{"ingest", "--table", "power", tuesday}, c...)...); !strings.Contains(out, "0 inserted, 96 already present") {
		t.Fatalf("the same readings from another file:\n%s", out)
	}
	first := func(i int) string { return "1.5" }
	edi := write("delivery.edi", interchange("IC9", msconsMessage("M7", "DOC7", "202603301000", "51234567895",
		metering.Date{Year: 2026, Month: 3, Day: 29}, "220", first)))
	mustRun(t, append([]string{"ingest", "--table", "power", edi}, c...)...)
	got := storedQuery(t, c, `SELECT source_kind, source_ref, count(*) AS n FROM readings GROUP BY ALL ORDER BY 1`)
	if want := "source_kind,source_ref,n\ncsv," + monday + ",96\nmscons,IC9:M7,92"; got != want {
		t.Fatalf("sources:\n%s\nwant\n%s", got, want)
	}
}

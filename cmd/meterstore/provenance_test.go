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

// TestIngestAttributionRefused: meterstore ingest holds a CSV source_ref
// cell and --substitute-by to the bound of series.CheckAttribution and
// exits 1 naming the line and the column, or the flag: a 5 MB cell was
// stored on its reading, an empty --substitute-by wrote substitutes as
// measured values, and a second one silently replaced the first. Nothing
// of a refused file is written.
func TestIngestAttributionRefused(t *testing.T) {
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
	lines := strings.Split(strings.TrimSuffix(deliveryCSV(1, 0), "\n"), "\n")
	lines[0] += ",source_ref"
	for i := 1; i < len(lines); i++ {
		lines[i] += ",ok.csv"
	}
	lines[3] = lines[3][:strings.LastIndexByte(lines[3], ',')+1] + strings.Repeat("x", 5<<20)
	big := filepath.Join(dir, "big.csv")
	if err := os.WriteFile(big, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain.csv")
	if err := os.WriteFile(plain, []byte(deliveryCSV(1, 0)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what string
		args []string
		want []string
	}{
		{"a 5 MB source_ref cell", []string{big}, []string{"line 4", `column "source_ref"`, "5242880 bytes, longer than the 1024 allowed"}},
		{"an empty --substitute-by", []string{"--substitute-by", "", plain}, []string{"--substitute-by: empty"}},
		{"--substitute-by twice", []string{"--substitute-by", "9900000000012", "--substitute-by", "9900000000029", plain}, []string{"substitute-by", "given twice"}},
		{"a line break in --substitute-by", []string{"--substitute-by", "99\n", plain}, []string{"--substitute-by: control character U+000A"}},
	} {
		out, code := run(t, append(append([]string{"ingest", "--table", "power"}, tc.args...), c...)...)
		for _, w := range tc.want {
			if code != 1 || !strings.Contains(out, w) {
				t.Errorf("%s: exit %d, want 1 naming %q:\n%.2000s", tc.what, code, w, out)
			}
		}
		if len(out) > 20000 {
			t.Errorf("%s: %d bytes of output", tc.what, len(out))
		}
	}
	if got := storedQuery(t, c, `SELECT count(*) AS n FROM readings_versions`); got != "n\n0" {
		t.Fatalf("refused files stored readings:\n%s", got)
	}
}

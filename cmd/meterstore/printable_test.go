package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrintable: text from outside reaches the terminal with its control
// characters, bidirectional overrides and stray bytes escaped; plain text,
// umlauts included, as it is.
func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"Lieferung März.csv":  "Lieferung März.csv",
		"red\x1b[31m.csv":     `red\x1b[31m.csv`,
		"csi\u009b2J":         `csi\u009b2J`,
		"cr\rlf\n":            `cr\rlf\n`,
		"rtl\u202egnp.exe":    `rtl\u202egnp.exe`,
		"bad\xffbyte":         `bad\xffbyte`,
		"tab\tin a table":     `tab\tin a table`,
		"nul\x00and del\x7f!": `nul\x00and del\x7f!`,
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %s, want %s", in, got, want)
		}
	}
	if got := shownName("day 1.csv"); got != "day 1.csv" {
		t.Errorf("a plain name: %s", got)
	}
	if got := shownName("two\nlines.csv"); got != `"two\nlines.csv"` {
		t.Errorf("a name with a line break: %s", got)
	}
}

// TestIngestEscapesNames: a file whose name holds escape sequences is
// named in ingest's summary and errors quoted and escaped, and a query's
// table output escapes a value's control characters: nothing the command
// prints puts a raw escape sequence on the terminal.
func TestIngestEscapesNames(t *testing.T) {
	cfgPath, dir := msconsDeployment(t)
	c := []string{"-c", cfgPath}
	mustRun(t, append([]string{"create", "--now", "2026-03-01T00:00:00Z"}, c...)...)
	evil := filepath.Join(dir, "day\x1b[2J\x1b[31mred\r.csv")
	if err := os.WriteFile(evil, []byte(deliveryCSV(1, 0)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, append([]string{"ingest", "--table", "power", evil}, c...)...)
	if strings.ContainsAny(out, "\x1b\r") || !strings.Contains(out, `day\x1b[2J\x1b[31mred\r.csv": 96 readings`) {
		t.Errorf("ingest's summary:\n%q", out)
	}
	missing := filepath.Join(dir, "gone\x1b]0;owned\x07.csv")
	out, code := run(t, append([]string{"ingest", "--table", "power", missing}, c...)...)
	if code != 1 || strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, `gone\x1b]0;owned\a.csv": no such file`) {
		t.Errorf("ingest of a missing file: exit %d\n%q", code, out)
	}
	out = mustRun(t, append([]string{"query", "--table", "power", `SELECT 'a' || chr(27) || '[2J' || chr(9) || 'b' AS "v` + "\x1b" + `"`}, c...)...)
	if strings.ContainsAny(out, "\x1b") || !strings.Contains(out, `a\x1b[2J\tb`) || !strings.Contains(out, `v\x1b`) {
		t.Errorf("query's table:\n%q", out)
	}
}

package series

import (
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
)

// TestAttributionBounded: the attribution columns (source_kind,
// source_ref, substituted_by) take plain text of at most
// MaxAttributionLen bytes, and every text column refuses NUL and bytes
// that are not UTF-8, in the one check both tiers apply; the refusal
// names the row and the column, and quotes a long value cut short.
func TestAttributionBounded(t *testing.T) {
	tab := lastgang("power")
	tab.Columns = append(ProvenanceColumns(), Column{Name: ColumnSubstitutedBy}, Column{Name: "note"})
	if err := tab.Validate(); err != nil {
		t.Fatal(err)
	}
	cal, err := metering.NewCalendar()
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	row := func(col, v string) Reading {
		return Reading{MaLo: "51238696781", OBIS: "1-1:1.29.0", From: from, To: from.Add(15 * time.Minute),
			Value: 1000, Unit: metering.KilowattHour, Quality: metering.TrueValue, Resolution: metering.QuarterHour,
			Version: 1, VersionScope: "9900000000003:2026-03", Extra: map[string]string{col: v}}
	}
	for _, ok := range []struct{ col, v string }{
		{ColumnSourceRef, strings.Repeat("x", MaxAttributionLen)},
		{ColumnSourceRef, "Lieferung März.csv"},
		{ColumnSourceKind, SourceAPI},
		{ColumnSubstitutedBy, "9900000000003"},
		{"note", "two\nlines\tand a tab"}, // an ordinary text column keeps its control characters
	} {
		r := row(ok.col, ok.v)
		if _, err := NewChecker(tab, cal).CheckBatch("write", []Reading{r}); err != nil {
			t.Errorf("%s %.20q: %v", ok.col, ok.v, err)
		}
	}
	for _, bad := range []struct{ col, v, want string }{
		{ColumnSourceRef, strings.Repeat("x", MaxAttributionLen+1), "1025 bytes, longer than the 1024 allowed"},
		{ColumnSourceRef, strings.Repeat("y", 5<<20), "5242880 bytes, longer than the 1024 allowed"},
		{ColumnSourceRef, "a\x00b", "control character U+0000 at byte 1"},
		{ColumnSourceRef, "file\x1b[31m.csv", "control character U+001B at byte 4"},
		{ColumnSourceKind, "api\n", "control character U+000A at byte 3"},
		{ColumnSubstitutedBy, "99\u009b00", "control character U+009B at byte 2"},
		{ColumnSubstitutedBy, "99\xff", "not valid UTF-8"},
		{"note", "a\x00b", "NUL at byte 1"},
		{"note", "\xc3(", "not valid UTF-8"},
	} {
		rows := []Reading{row("note", "fine"), row(bad.col, bad.v)}
		rows[1].From, rows[1].To = rows[0].To, rows[0].To.Add(15*time.Minute) // the next quarter hour
		_, err := NewChecker(tab, cal).CheckBatch("write", rows)
		if err == nil {
			t.Errorf("%s %.20q: accepted", bad.col, bad.v)
			continue
		}
		e := wantError(t, err, InvalidInput)
		msg := err.Error()
		if len(e.Rows) != 1 || e.Rows[0] != 1 || !strings.Contains(msg, `column "`+bad.col+`"`) || !strings.Contains(msg, bad.want) {
			t.Errorf("%s %.20q: rows %v, %s; want row 1, the column and %q", bad.col, bad.v, e.Rows, msg, bad.want)
		}
		if len(msg) > 1000 {
			t.Errorf("%s: the error quotes %d bytes of the value", bad.col, len(msg))
		}
	}
	// A coded value of the declaration is held to the same rule.
	coded := lastgang("power")
	coded.Columns = []Column{{Name: ColumnSubstitutedBy, Values: []string{"ok", "bad\x1b"}}}
	if err := coded.Validate(); err == nil || !strings.Contains(err.Error(), "control character") {
		t.Errorf("a coded substituted_by with ESC: %v", err)
	}
}

// TestCheckAttribution: the rule alone, as the store and the HTTP API
// apply it to a batch's source and substitute author before any row.
func TestCheckAttribution(t *testing.T) {
	for v, want := range map[string]string{
		"":                                     "empty",
		strings.Repeat("é", MaxAttributionLen): "2048 bytes",
		"tab\there":                            "U+0009",
		"del\x7f":                              "U+007F",
		"\xfe":                                 "not valid UTF-8",
	} {
		if err := CheckAttribution(v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckAttribution(%.20q) = %v, want %q", v, err, want)
		}
	}
	if err := CheckAttribution("IC7:M2 – Zähler"); err != nil {
		t.Errorf("plain text refused: %v", err)
	}
}

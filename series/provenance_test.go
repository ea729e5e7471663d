package series

import (
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
)

// TestRestatedProvenance: two deliveries of one reading from different
// sources are the same statement, in a batch and against a stored row,
// while another attribute column still tells a restatement.
func TestRestatedProvenance(t *testing.T) {
	tab := lastgang("power")
	tab.Columns = append(ProvenanceColumns(), Column{Name: "note"})
	if err := tab.Validate(); err != nil {
		t.Fatal(err)
	}
	if !tab.Provenance() || lastgang("plain").Provenance() {
		t.Fatal("Provenance misreports the declaration")
	}
	from := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	r := func(kind, ref, note string) Reading {
		return Reading{MaLo: "51238696781", OBIS: "1-1:1.29.0", From: from, To: from.Add(15 * time.Minute),
			Value: 1000, Unit: metering.KilowattHour, Quality: metering.TrueValue, Resolution: metering.QuarterHour,
			Version: 1, VersionScope: "9900000000003:2026-03",
			Extra: map[string]string{ColumnSourceKind: kind, ColumnSourceRef: ref, "note": note}}
	}
	a, b := r(SourceCSV, "monday.csv", "x"), r(SourceMSCONS, "IC1:M1", "x")
	if col, _, _ := tab.Restated(&a, &b); col != "" {
		t.Fatalf("another source restates %s", col)
	}
	delete(b.Extra, ColumnSourceRef)
	if col, _, _ := tab.Restated(&a, &b); col != "" {
		t.Fatalf("a source left out restates %s", col)
	}
	c := r(SourceCSV, "monday.csv", "y")
	if col, _, _ := tab.Restated(&a, &c); col != "note" {
		t.Fatalf("another note: %q, want note", col)
	}
	cal, err := metering.NewCalendar()
	if err != nil {
		t.Fatal(err)
	}
	batch, err := NewChecker(tab, cal).CheckBatch("write", []Reading{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if !batch.Repeats[1] {
		t.Fatal("the second delivery in one batch is not a repeat")
	}
}

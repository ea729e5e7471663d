package store

import (
	"fmt"
	"slices"
	"testing"

	"github.com/meterstore/meterstore/series"
)

// TestWriteProvenance: a table declaring the provenance columns records
// each batch's source, a row's own source wins over the batch's, and a
// reading delivered again identically from another source is present in
// either tier, keeping its first source; archival carries the columns to
// the cold tier, so readings returns them on both sides of W.
func TestWriteProvenance(t *testing.T) {
	ctx := t.Context()
	tab := power()
	tab.Columns = append(tab.Columns, series.ProvenanceColumns()...)
	e := newEnv(t)
	s := e.open(t, Options{Tables: []Table{tab}})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(6)); err != nil {
		t.Fatal(err)
	}
	monday := WriteOptions{Source: Source{Kind: series.SourceCSV, Ref: "monday.csv"}}
	tuesday := WriteOptions{Source: Source{Kind: series.SourceMSCONS, Ref: "IC7:M2"}}
	batch := func(slot int) []Reading {
		return []Reading{qh(1, 0, slot, "A", 1, 100), qh(1, 4, slot, "A", 1, 200)}
	}
	write := func(rows []Reading, o WriteOptions) WriteResult {
		t.Helper()
		res, err := s.WriteWith(ctx, "power", rows, o)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := write(batch(0), monday); res.Inserted != 2 {
		t.Fatalf("first delivery: %+v", res)
	}
	own := batch(1)
	own[1].Extra = map[string]string{"channel": "A", series.ColumnSourceKind: series.SourceAPI}
	write(own, monday)
	// The same readings from another file: present, not a restatement.
	if res := write(batch(0), tuesday); fmt.Sprint(res.Status) != "[present present]" {
		t.Fatalf("redelivery from another source: %v", res.Status)
	}

	if out, err := s.Archive(ctx, "power", dayN(5)); err != nil || !out.Watermark.Equal(dayN(3)) {
		t.Fatalf("archive: %+v, %v", out, err)
	}
	for _, name := range []string{series.ColumnSourceKind, series.ColumnSourceRef} {
		if cols := coldColumns(t, e, "power"); !slices.Contains(cols, name) {
			t.Fatalf("the Iceberg schema %v has no %s", cols, name)
		}
	}
	// Below W the late path judges the redelivery by the same rule.
	if res := write(batch(0), tuesday); fmt.Sprint(res.Status) != "[present present]" {
		t.Fatalf("redelivery from another source after archival: %v", res.Status)
	}
	// A late correction below W carries its source to the cold tier.
	corr := qh(1, 0, 2, "A", 2, 300)
	write([]Reading{corr}, tuesday)
	// A value restated under the same version is still a violation.
	bad := qh(1, 4, 0, "A", 1, 201)
	if _, err := s.WriteWith(ctx, "power", []Reading{bad}, tuesday); !isKind(err, series.IntegrityViolation) {
		t.Fatalf("a restated value from another source: %v", err)
	}

	got := mustQuery(t, s, `SELECT "from" < `+ts(dayN(3))+` AS cold, value, source_kind, coalesce(source_ref, '-') FROM readings ORDER BY "from"`)
	want := "[[true 0.0001 csv monday.csv] [true 0.0001 csv monday.csv] [true 0.0003 mscons IC7:M2] " +
		"[false 0.0002 csv monday.csv] [false 0.0002 api -]]"
	if fmt.Sprint(got.Rows) != want {
		t.Fatalf("readings:\n got %v\nwant %s", got.Rows, want)
	}
	if got := mustQuery(t, s, `SELECT count(*) FROM readings_versions WHERE source_kind IS NULL`); fmt.Sprint(got.Rows) != "[[0]]" {
		t.Fatalf("versions without a source: %v", got.Rows)
	}
}

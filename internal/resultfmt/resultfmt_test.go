package resultfmt

import (
	"bytes"
	"encoding/csv"
	"slices"
	"testing"
	"time"
)

func TestUniqueNames(t *testing.T) {
	got := UniqueNames([]string{"a", "a", "a_2", "b", "a", "b"})
	want := []string{"a", "a_3", "a_2", "b", "a_4", "b_2"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestCSVRowTypes: a row's cells rendered through CSVRow's one buffer are
// Text's of each value, whatever the row before held, as encoding/csv
// writes them.
func TestCSVRowTypes(t *testing.T) {
	at := time.Date(2026, 3, 2, 23, 15, 0, 0, time.FixedZone("CET", 3600))
	rows := [][]any{
		{"20000000008", nil, at, at, FixedInt(-1250, 6), Fixed{Abs: 7}, int64(-42), int32(7), true, 1.5, infinity[0], minusInfinity[1], []byte{1, 2}},
		{"", "x", at.Add(time.Hour), at, FixedInt(0, 6), Fixed{Abs: 1 << 63}, int64(0), int32(-1), false, -2.25e-9, at, at, nil},
	}
	types := []string{"VARCHAR", "VARCHAR", "TIMESTAMP WITH TIME ZONE", "DATE", "DECIMAL(18,6)", "DECIMAL(20,0)", "BIGINT", "INTEGER", "BOOLEAN", "DOUBLE", "TIMESTAMP", "DATE", "BLOB"}
	var r CSVRow
	for _, row := range rows {
		var want bytes.Buffer
		w := csv.NewWriter(&want)
		w.Write(Cells(row, types))
		w.Flush()
		if got := r.Append(nil, row, types); string(got) != want.String() {
			t.Errorf("CSVRow %q, Cells %q", got, want.String())
		}
	}
}

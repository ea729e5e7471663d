package hot

import (
	"testing"

	"github.com/meterstore/meterstore/series"
)

// TestSpareRows: the rows of a written batch come back to the next batch
// of as many or fewer rows, cleared of the readings they held; no more
// than two batches' rows are kept, and none of a batch over keptRows.
func TestSpareRows(t *testing.T) {
	var s spareRows
	r := series.Reading{MaLo: "50000000001"}
	rows := s.take(100)
	for i := range rows {
		rows[i] = staged{src: &r, row: int32(i), newSeries: true, lower: true}
	}
	s.give(&batch{rows: rows[:60]})
	again := s.take(80)
	if &again[0] != &rows[0] {
		t.Fatal("the rows of the batch written before were not reused")
	}
	for i, g := range again[:cap(again)] {
		if g.src != nil || g.row != 0 || g.newSeries || g.lower {
			t.Fatalf("reused row %d holds %+v, want it cleared", i, g)
		}
	}
	if bigger := s.take(101); len(bigger) != 101 {
		t.Fatalf("took %d rows, want 101", len(bigger))
	}

	for range 3 {
		s.give(&batch{rows: make([]staged, 10)})
	}
	s.give(&batch{rows: make([]staged, keptRows+1)})
	if len(s.kept) != 2 {
		t.Fatalf("%d batches' rows kept, want 2", len(s.kept))
	}
	for _, k := range s.kept {
		if cap(k) > keptRows {
			t.Fatalf("kept %d rows, over keptRows", cap(k))
		}
	}
}

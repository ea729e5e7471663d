package hot

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/meterstore/meterstore/internal/hot/pgnum"

	"github.com/meterstore/meterstore/series"
)

// TestSpareRows: the rows of a written batch come back to the next batch
// of as many or fewer rows, cleared of the readings they held; no more
// than two batches' rows are kept, and none of a batch over keptRows;
// likewise their encodings, which reset reuses where they have room.
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

	enc := encodeLean(again, 0, nil)
	s.give(&batch{rows: again, enc: enc})
	if got := s.takeEncoded(); got != enc {
		t.Fatal("the encoding of the batch written before was not kept")
	}
	if s.takeEncoded() != nil {
		t.Fatal("an encoding kept twice")
	}
	if e := enc.reset(10, 64); e != enc || len(e.buf) != 0 || len(e.at) != 10 {
		t.Fatalf("reset for fewer rows: a new encoding, or %d bytes and %d rows", len(e.buf), len(e.at))
	}
	// An encoding reused holds what a new one would.
	var a, b []staged
	for i := range 30 {
		a = append(a, staged{from: day.Add(time.Duration(i) * 15 * time.Minute), version: pgnum.Uint(i)})
		b = append(b, staged{from: day.Add(time.Duration(i+7) * time.Hour), value: pgnum.Micro(i * 1000)})
	}
	reused := encodeLean(a[:20], 900e6, encodeLean(b, 900e6, nil))
	if fresh := encodeLean(a[:20], 900e6, nil); !bytes.Equal(reused.buf, fresh.buf) || !slices.Equal(reused.at, fresh.at) {
		t.Fatal("an encoding reused differs from a new one")
	}
	if e := enc.reset(200, 64); e == enc {
		t.Fatal("reset for more rows than the encoding has room for reused it")
	}

	for range 3 {
		s.give(&batch{rows: make([]staged, 10), enc: &encoded{}})
	}
	s.give(&batch{rows: make([]staged, keptRows+1)})
	if len(s.kept) != 2 || len(s.encs) != 2 {
		t.Fatalf("%d batches' rows and %d encodings kept, want 2", len(s.kept), len(s.encs))
	}
	for _, k := range s.kept {
		if cap(k) > keptRows {
			t.Fatalf("kept %d rows, over keptRows", cap(k))
		}
	}
}

package cold

import (
	"testing"

	icebergio "github.com/apache/iceberg-go/io"
)

// TestPassedMonthFinishes writes an archival's rows across a month's end:
// in order, the January file is finished when the February rows come, so
// that its row group and dictionaries are not held to the end of the
// window; a stream not known to be in order keeps every file open. Both
// write every row.
func TestPassedMonthFinishes(t *testing.T) {
	e := newEnv(t, Options{})
	h := e.ensure(t, loadProfile("power"))
	ctx := t.Context()
	ice, err := e.tier.load(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := ice.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wfs := fsys.(icebergio.WriteFileIO)
	// Two meters' last day of January and first of February: the rows of
	// each hot partition by market location, partition after partition.
	jan31 := feb2026.AddDate(0, 0, -1)
	in := append(append(quarterHours(0, jan31, 96), quarterHours(1, jan31, 96)...),
		append(quarterHours(0, feb2026, 96), quarterHours(1, feb2026, 96)...)...)

	for _, inOrder := range []bool{true, false} {
		enc, err := newEncoder(&h.decl, e.tier.cal, "archive", ice.Schema(), 64)
		if err != nil {
			t.Fatal(err)
		}
		enc.mark, enc.order = true, newKeyOrder(&h.decl)
		f, err := newFanout(ctx, ice, wfs, enc.schema)
		if err != nil {
			t.Fatal(err)
		}
		f.inOrder = inOrder
		for b, err := range enc.batches(Readings(in), nil) {
			if err != nil {
				t.Fatal(err)
			}
			err = f.add(b)
			b.Release()
			if err != nil {
				t.Fatal(err)
			}
		}
		open, done := len(f.open), len(f.done)
		files, err := f.close()
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, df := range files {
			n += df.Count()
		}
		wantOpen, wantDone := 2, 0
		if inOrder {
			wantOpen, wantDone = 1, 1
		}
		if open != wantOpen || done != wantDone {
			t.Errorf("in order %v: %d files open and %d finished before the end, want %d and %d", inOrder, open, done, wantOpen, wantDone)
		}
		if len(files) != 2 || n != int64(len(in)) {
			t.Errorf("in order %v: %d files of %d rows, want 2 of %d", inOrder, len(files), n, len(in))
		}
	}
}

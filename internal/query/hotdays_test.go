package query

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestDayCopiesTakeAndRemove checks the bookkeeping of the copies of day
// sums: a read takes the copies there are, under the token it names, of
// partitions with an end, and touches them; it misses the others; a
// different token, table or column set names another file; the removal
// after a write keeps what a read used within dayCopyIdle and removes
// the rest.
func TestDayCopiesTakeAndRemove(t *testing.T) {
	c := newDayCopies(Settings{CacheDir: t.TempDir()})
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 3, 24, 0, 0, 0, 0, time.UTC)
	cols := []HotColumn{{"malo_id", KindText}, {"present", KindInt64}}
	toks := []DayToken{
		{Unit: 0, From: day, To: day.Add(24 * time.Hour), Token: "a"},
		{Unit: 1, From: day.Add(24 * time.Hour), To: day.Add(48 * time.Hour), Token: "b"},
		{Unit: 2, From: day.Add(48 * time.Hour), Token: "c"}, // no end
	}
	old := time.Now().Add(-2 * dayCopyIdle)
	have := c.path("power", cols, toks[0])
	if err := os.WriteFile(have, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(have, old, old); err != nil {
		t.Fatal(err)
	}
	for _, other := range []string{
		c.path("power", cols, DayToken{From: toks[0].From, To: toks[0].To, Token: "z"}),
		c.path("gas", cols, toks[0]),
		c.path("power", cols[:1], toks[0]),
	} {
		if other == have {
			t.Fatalf("another token, table or column set names the same copy %s", have)
		}
	}

	files, units, missed := c.take("power", cols, toks)
	if len(files) != 1 || files[0] != have || len(units) != 1 || units[0] != 0 {
		t.Fatalf("taken %v of units %v, want %s of unit 0", files, units, have)
	}
	if len(missed) != 1 || missed[0].tok.Unit != 1 || missed[0].path != c.path("power", cols, toks[1]) {
		t.Fatalf("missed %+v, want unit 1's copy only (unit 2 has no end)", missed)
	}

	// A copy no read used within dayCopyIdle, and a leftover of a write.
	stale := c.path("power", cols, DayToken{From: toks[0].From, To: toks[0].To, Token: "stale"})
	leftover := stale + ".tmp-1"
	for _, p := range []string{stale, leftover} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	c.removeIdle()
	left, err := filepath.Glob(filepath.Join(c.dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0] != have {
		t.Fatalf("left after the removal: %v, want the copy taken (touched) only", left)
	}
}

package hot

import (
	"testing"
	"time"

	"github.com/meterstore/meterstore/series"
)

// TestStoredDaysTwoStatements checks that the stored day sums of the
// partitions no dirty row names come from two statements, the first clean
// unit's and that of the first unit of the second half, while a partition with dirty series has its own, summed from
// its readings; the sums stay those of GROUP BY over the winners, with
// and without keys in the range.
func TestStoredDaysTwoStatements(t *testing.T) {
	for _, lay := range dictLayouts {
		t.Run(lay.String(), func(t *testing.T) { testStoredDaysTwoStatements(t, lay) })
	}
}

func testStoredDaysTwoStatements(t *testing.T, lay layout) {
	h, pool := dictTier(t, lay)
	tab := readTable(t, h, "clean", series.IntegrityStatement)
	mustWrite(t, h, tab, readRows(3, 3, 100))
	sameDays(t, h, tab, series.Range{}) // sums from the readings, then refreshes
	if n := countRows(t, pool, dirtyName(tab)); n != 0 {
		t.Fatalf("%d dirty rows after a refresh", n)
	}
	rows := unitRows(t, h, tab)
	if len(rows) != 3 || rows[0] == 0 || rows[1] != 0 || rows[2] == 0 {
		t.Fatalf("rows a unit: %v, want the first unit's statement to have the first two units' rows, the third's its own", rows)
	}
	sameDays(t, h, tab, series.Range{})
	sameDays(t, h, tab, series.Range{MaLo: []string{malo(1)}})
	sameDays(t, h, tab, series.Range{MaLo: []string{malo(0), malo(2)}, OBIS: []string{"1-1:1.29.0"}})

	// A correction of the second partition: its series are dirty in the
	// next snapshot, which sums that partition from its readings.
	plainCorrection(t, pool, lay, tab, day.Add(24*time.Hour+7*time.Hour))
	rows = unitRows(t, h, tab)
	if rows[0] == 0 || rows[1] == 0 {
		t.Fatalf("rows a unit: %v, want the dirty second unit read by a statement of its own", rows)
	}
	sameDays(t, h, tab, series.Range{})
	plainCorrection(t, pool, lay, tab, day.Add(48*time.Hour+9*time.Hour))
	sameDays(t, h, tab, series.Range{MaLo: []string{malo(0), malo(1), malo(2)}})
}

// unitRows returns how many day sums each unit of a read of all of tab
// has, in a snapshot of its own.
func unitRows(t *testing.T, h *Tier, tab *series.Table) []int {
	t.Helper()
	ctx := t.Context()
	s, r, err := h.OpenSnapshotRead(ctx, 2, tab, series.Range{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return readUnitRows(t, r)
}

// readUnitRows returns how many day sums each unit of r has.
func readUnitRows(t *testing.T, r *Read) []int {
	t.Helper()
	ctx := t.Context()
	out := make([]int, r.Units(0))
	for u := range out {
		c, err := r.ScanDays(ctx, u, time.Time{}, []int{0})
		if err != nil {
			t.Fatal(err)
		}
		for c.Next(ctx) {
			out[u]++
		}
		if err := c.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestStoredDaysHalvesApart checks that the two statements of the clean
// day sums run on two connections of the snapshot, which the read asks
// for as it checks the dirty log: on one, PostgreSQL would serve them in
// turns.
func TestStoredDaysHalvesApart(t *testing.T) {
	h, _ := dictTier(t, layoutLean)
	tab := readTable(t, h, "apart", series.IntegrityStatement)
	mustWrite(t, h, tab, readRows(3, 3, 100))
	sameDays(t, h, tab, series.Range{}) // sums from the readings, then refreshes
	ctx := t.Context()
	s, r, err := h.OpenSnapshotRead(ctx, 2, tab, series.Range{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if r.Units(0) != 3 {
		t.Fatalf("%d units, want 3", r.Units(0))
	}
	first, err := r.ScanDays(ctx, 0, time.Time{}, []int{0})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := r.ScanDays(ctx, 2, time.Time{}, []int{0})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if first.conn == nil || second.conn == nil || first.conn == second.conn {
		t.Fatalf("the halves' statements run on connections %p and %p, want two", first.conn, second.conn)
	}
	for _, c := range []*Cursor{first, second} {
		n := 0
		for c.Next(ctx) {
			n++
		}
		if err := c.Err(); err != nil || n == 0 {
			t.Fatalf("%d rows, %v", n, err)
		}
	}
}

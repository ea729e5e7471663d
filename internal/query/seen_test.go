package query

import (
	"slices"
	"testing"
)

// TestBelowSeenW reads a cold range twice: the first read reads W0, the
// second, which ends below the W the first split at, plans the cold tier
// alone. When W then lies below the one seen (a log that lost its newest
// commits), a read below the seen W reads W0 again instead of trusting it,
// and so meets what the tiers say: rows neither tier holds (the hot
// floor above the W), which fails the read.
func TestBelowSeenW(t *testing.T) {
	s := threeMonths(t)
	e := newEngine(t, s)
	const jan = `SELECT count(*) FROM readings WHERE "from" >= '2026-01-01 00:00:00Z' AND "from" < '2026-01-02 00:00:00Z'`
	cold := "cold[2026-01-01T00:00:00,2026-01-02T00:00:00)"
	for i, want := range [][]string{{"watermark", cold}, {cold}} {
		res := query(t, e, jan)
		if n := res.Rows[0][0].(int64); n != 192 {
			t.Fatalf("read %d: %d readings, want 192", i, n)
		}
		if !slices.Equal(res.Tiers, []string{"cold"}) || !res.Watermark.Equal(mar2026) {
			t.Fatalf("read %d: tiers %v, W %v", i, res.Tiers, res.Watermark)
		}
		if got := s.Calls(); !slices.Equal(got, want) {
			t.Fatalf("read %d: calls %v, want %v", i, got, want)
		}
	}

	s.mu.Lock()
	s.w = feb2026
	s.mu.Unlock()
	const feb = `SELECT count(*) FROM readings WHERE "from" >= '2026-02-10 00:00:00Z' AND "from" < '2026-02-11 00:00:00Z'`
	_, err := queryOf(t.Context(), e, feb)
	calls := s.Calls()
	if !slices.Contains(calls, "watermark") || err == nil {
		t.Fatalf("W went back below the one seen, and the read trusted the one seen: calls %v, err %v", calls, err)
	}
}

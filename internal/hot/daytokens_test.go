package hot

import (
	"maps"
	"testing"
	"time"

	"github.com/meterstore/meterstore/series"
)

// TestDayTokens checks the tokens of the stored day sums: every clean
// partition of a read of all series has one; a partition with dirty
// series has none until its sums are stored again, under a new token,
// while the others keep theirs; a read of some market locations has none;
// any change to the aggregate's rows, through plain SQL too, draws a new
// token, TRUNCATE forgets them all; a table whose aggregate predates the
// tokens gets one for each bucket with sums; and the units a caller skips
// hand over no sums.
func TestDayTokens(t *testing.T) {
	h, pool := dictTier(t, layoutLean)
	ctx := t.Context()
	tab := readTable(t, h, "tokens", series.IntegrityStatement)
	mustWrite(t, h, tab, readRows(3, 3, 100))
	if toks := dayTokens(t, h, tab, series.Range{}); len(toks) != 0 {
		t.Fatalf("tokens of dirty partitions: %v", toks)
	}
	sameDays(t, h, tab, series.Range{}) // sums, then refreshes
	first := dayTokens(t, h, tab, series.Range{})
	if len(first) != 3 {
		t.Fatalf("tokens of three clean partitions: %v", first)
	}
	if again := dayTokens(t, h, tab, series.Range{}); !maps.Equal(again, first) {
		t.Fatalf("tokens changed without a change: %v, then %v", first, again)
	}
	if toks := dayTokens(t, h, tab, series.Range{MaLo: []string{malo(1)}}); len(toks) != 0 {
		t.Fatalf("tokens of a read of one market location: %v", toks)
	}

	second := day.Add(24 * time.Hour)
	plainCorrection(t, pool, layoutLean, tab, second.Add(7*time.Hour))
	dirty := dayTokens(t, h, tab, series.Range{})
	if _, ok := dirty[second]; ok || len(dirty) != 2 {
		t.Fatalf("tokens with the second partition dirty: %v", dirty)
	}
	sameDays(t, h, tab, series.Range{}) // folds the correction
	folded := dayTokens(t, h, tab, series.Range{})
	for from, tok := range first {
		if changed := folded[from] != tok; changed != from.Equal(second) || folded[from] == "" {
			t.Fatalf("tokens before the correction %v, after its fold %v: want only the second partition's new", first, folded)
		}
	}

	days := h.ident(daysName(tab))
	if _, err := pool.Exec(ctx, `UPDATE `+days+` SET present = present WHERE bucket = $1`, day); err != nil {
		t.Fatal(err)
	}
	if toks := dayTokens(t, h, tab, series.Range{}); toks[day] == folded[day] || toks[second] != folded[second] {
		t.Fatalf("after an UPDATE of the first partition's sums: tokens %v, before %v", toks, folded)
	}

	// A unit skipped hands over nothing; the others what they hold.
	s, r, err := h.OpenSnapshotRead(ctx, 2, tab, series.Range{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.SkipDays([]int{0}) {
		t.Fatal("skipping the first unit left none")
	}
	got := readUnitRows(t, r)
	all := make([]int, r.Units(0))
	for u := range all {
		all[u] = u
	}
	if r.SkipDays(all) {
		t.Fatalf("skipping every unit (%v) left one", all)
	}
	s.Close()
	if got[0] != 0 || got[1]+got[2] == 0 {
		t.Fatalf("day sums a unit with the first skipped: %v", got)
	}

	// An aggregate that predates the tokens gets them at the next ensure.
	tokens := h.ident(dayTokensName(tab))
	drop := []string{`DROP TABLE ` + tokens}
	for _, e := range tokenEvents {
		drop = append(drop, `DROP TRIGGER `+quote(tokenTrigger(tab, e.name))+` ON `+days)
	}
	for _, stmt := range drop {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	if toks := dayTokens(t, h, tab, series.Range{}); len(toks) != 0 {
		t.Fatalf("tokens without their table: %v", toks)
	}
	if err := newTierOn(t, pool).Ensure(ctx, tab); err != nil {
		t.Fatal(err)
	}
	if toks := dayTokens(t, h, tab, series.Range{}); len(toks) != 3 {
		t.Fatalf("tokens after the ensure: %v", toks)
	}
	if _, err := pool.Exec(ctx, `TRUNCATE `+days); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, pool, dayTokensName(tab)); n != 0 {
		t.Fatalf("%d tokens after TRUNCATE", n)
	}
}

// dayTokens returns the tokens of a read of q of tab, by its units'
// partitions, in a snapshot of its own.
func dayTokens(t *testing.T, h *Tier, tab *series.Table, q series.Range) map[time.Time]string {
	t.Helper()
	s, r, err := h.OpenSnapshotRead(t.Context(), 2, tab, q)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	toks, err := r.DayTokens(t.Context(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[time.Time]string{}
	for _, tok := range toks {
		if tok.Token == "" || r.parts[tok.Unit].From != tok.From {
			t.Fatalf("token %+v", tok)
		}
		out[tok.From.UTC()] = tok.Token
	}
	return out
}

package query

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestAnalysisKept: a statement asked again is not analysed again, and
// answers and reads the tiers as the first time did; the same text with
// other values bound is analysed anew and reads the tiers for them; a
// kept analysis is authorised anew every time.
func TestAnalysisKept(t *testing.T) {
	s := threeMonths(t)
	e := newEngine(t, s)
	const text = `SELECT malo_id, count(*), sum(value) FROM readings WHERE "from" >= $1 AND "from" < $2 AND malo_id = $3 GROUP BY 1`
	lo, hi := time.Date(2026, 2, 28, 23, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 1, 0, 0, 0, time.UTC)
	run := func(may func(string) bool, params ...any) ([]string, []string, error) {
		st, err := e.Prepare(t.Context(), text, PrepareOptions{Table: e.first(), Params: params, May: may})
		if err != nil {
			return nil, nil, err
		}
		var rows []string
		err = st.Stream(t.Context(), func(*Header) error { return nil }, func(v []any) error {
			rows = append(rows, fmt.Sprint(v))
			return nil
		})
		return rows, s.Calls(), err
	}
	hits := func() int {
		e.analysed.mu.Lock()
		defer e.analysed.mu.Unlock()
		return e.analysed.hits
	}
	first, firstCalls, err := run(nil, lo, hi, malo(1))
	if err != nil || len(first) != 1 || hits() != 0 {
		t.Fatalf("first: %v %v, %d hits", first, err, hits())
	}
	again, againCalls, err := run(nil, lo, hi, malo(1))
	if err != nil || !slices.Equal(again, first) || !slices.Equal(againCalls, firstCalls) || hits() != 1 {
		t.Fatalf("again: %v %v, read %v; want %v, read %v, and one hit, %d", again, err, againCalls, first, firstCalls, hits())
	}
	other, otherCalls, err := run(nil, lo, hi.Add(time.Hour), malo(2))
	if err != nil || len(other) != 1 || slices.Equal(other, first) || hits() != 1 {
		t.Fatalf("another meter: %v %v, %d hits; want its own row, no hit", other, err, hits())
	}
	if !strings.Contains(fmt.Sprint(otherCalls), "02:00:00)") {
		t.Errorf("another range read %v, want to 02:00", otherCalls)
	}
	// Kept, and refused all the same.
	var forbidden *ForbiddenError
	if _, _, err := run(func(string) bool { return false }, lo, hi, malo(1)); !errors.As(err, &forbidden) {
		t.Errorf("a kept analysis of a table the caller may not read: %v", err)
	}
}

// TestAnalysesBounded: the analyses kept stay within maxAnalysedBytes,
// the least recently used going first, and a long statement is not kept.
func TestAnalysesBounded(t *testing.T) {
	c := newAnalyses()
	text := strings.Repeat("x", 60<<10)
	var keys []string
	for i := range 2 * maxAnalysedBytes / len(text) {
		key, ok := analysisKey(fmt.Sprintf("%s %d", text, i), "", nil)
		if !ok {
			t.Fatal("a statement within the bound is not kept")
		}
		keys = append(keys, key)
		c.put(key, analysis{sql: key})
		if _, ok := c.get(keys[0]); !ok && i < maxAnalysedBytes/len(text)/2 {
			t.Fatalf("the first analysis, used after each put, was forgotten after %d", i)
		}
	}
	if c.bytes > maxAnalysedBytes || len(c.byKey) != c.order.Len() {
		t.Fatalf("%d bytes kept, %d keys, %d in order", c.bytes, len(c.byKey), c.order.Len())
	}
	if _, ok := c.get(keys[0]); !ok {
		t.Error("the analysis used most often was forgotten")
	}
	if _, ok := c.get(keys[1]); ok {
		t.Error("an analysis used least recently was kept")
	}
	if _, ok := analysisKey(strings.Repeat("x", maxAnalysedStatement+1), "", nil); ok {
		t.Error("a statement past maxAnalysedStatement is kept")
	}
	if _, ok := analysisKey("SELECT 1", "", []any{[]int{1}}); ok {
		t.Error("a value of a type the key cannot tell apart is kept")
	}
	a, _ := analysisKey("SELECT $1", "", []any{int64(1)})
	b, _ := analysisKey("SELECT $1", "", []any{"1"})
	c2, _ := analysisKey("SELECT $1", "power", []any{int64(1)})
	d, _ := analysisKey("SELECT $1", "", []any{sql.Named("1", int64(1))})
	if a == b || a == c2 || a == d {
		t.Error("values or default tables that differ share a key")
	}
}

package query

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/meterstore/meterstore/series"
)

// stepNames returns the names of h's steps from describe on.
func stepNames(h Header) []string {
	var out []string
	for _, s := range h.Timing.Steps {
		out = append(out, s.Name)
	}
	if i := slices.Index(out, StepDescribe); i >= 0 {
		return out[i:]
	}
	return out
}

// forget has e's kept analysis of text take its next result for large.
func forget(t *testing.T, e *Engine, text string) {
	t.Helper()
	key, ok := analysisKey(text, e.first(), nil)
	a, hit := e.analysed.get(key)
	if !ok || !hit || a.memo == nil {
		t.Fatalf("no analysis kept of %s", text)
	}
	a.memo.ran(boundedRows + 1)
}

// TestSmallResultSkipsTheTable: one meter's day is computed and read
// without the result table, and gives the rows, columns and types the
// table gives; a statement whose result was large is not tried so again.
func TestSmallResultSkipsTheTable(t *testing.T) {
	s := threeMonths(t)
	e := newEngine(t, s)
	point := `SELECT "from", value, quality FROM readings WHERE malo_id = '` + malo(1) + `'
		AND "from" >= TIMESTAMPTZ '2026-02-28 23:00:00+00' AND "from" < TIMESTAMPTZ '2026-03-01 23:00:00+00' ORDER BY "from"`
	small := query(t, e, point)
	if got := stepNames(small.Header); !slices.Equal(got, []string{StepDescribe, StepBounded, StepFinish}) {
		t.Fatalf("steps of one meter's day: %v", got)
	}
	if len(small.Rows) == 0 {
		t.Fatal("no rows of one meter's day")
	}
	key, _ := analysisKey(point, e.first(), nil)
	a, _ := e.analysed.get(key)
	names, _, ok := a.memo.columns([]*Table{e.firstTable()})
	if !ok || !slices.Equal(names, small.Columns) {
		t.Fatalf("columns kept with the analysis: %v %v", names, ok)
	}
	if _, _, ok := a.memo.columns([]*Table{newEngine(t, s).firstTable()}); ok {
		t.Fatal("columns kept for another Table's views")
	}
	forget(t, e, point)
	table := query(t, e, point)
	if got := stepNames(table.Header); !slices.Equal(got, []string{StepDescribe, StepCreate, StepFinish, StepFirstPage}) {
		t.Fatalf("steps of a statement whose result was large: %v", got)
	}
	if !slices.Equal(small.Columns, table.Columns) || !slices.Equal(small.Types, table.Types) {
		t.Errorf("columns %v %v, table's %v %v", small.Columns, small.Types, table.Columns, table.Types)
	}
	if fmt.Sprint(small.Rows) != fmt.Sprint(table.Rows) {
		t.Errorf("rows differ from the table's:\n%v\n%v", small.Rows, table.Rows)
	}
}

// TestKeptColumnsFollowTheTable: a statement's columns kept with its
// analysis are the ones of the Table it bound; the table opened again
// with a column more, as an evolution of its declaration does, its next
// run has the new column, in its header and its rows.
func TestKeptColumnsFollowTheTable(t *testing.T) {
	before := newSource(t, loadProfile())
	evolved := loadProfile()
	evolved.Columns = append(evolved.Columns, series.Column{Name: "tariff"})
	after := newSource(t, evolved)
	var open atomic.Pointer[Table]
	for _, s := range []*memSource{before, after} {
		s.addHot(quarterHours(1, mar2026, 4)...)
	}
	first, err := NewTable(before.tab, before)
	if err != nil {
		t.Fatal(err)
	}
	open.Store(first)
	e, err := New(Settings{Threads: 1, MemoryLimit: "256MB"}, Tables{Names: []string{"power"},
		Open: func(context.Context, string) (*Table, error) { return open.Load(), nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	all := `SELECT * FROM readings ORDER BY "from"`
	old := query(t, e, all)
	if slices.Contains(old.Columns, "tariff") || !slices.Contains(old.Columns, "seq") || len(old.Rows) != 4 {
		t.Fatalf("before the evolution: columns %v, %d rows", old.Columns, len(old.Rows))
	}
	second, err := NewTable(after.tab, after)
	if err != nil {
		t.Fatal(err)
	}
	open.Store(second)
	res := query(t, e, all)
	if got := stepNames(res.Header); !slices.Equal(got, []string{StepDescribe, StepBounded, StepFinish}) {
		t.Fatalf("steps after the evolution: %v", got)
	}
	if !slices.Equal(res.Columns, append(slices.Clone(old.Columns), "tariff")) || len(res.Types) != len(res.Columns) {
		t.Fatalf("columns after the evolution %v %v, before %v", res.Columns, res.Types, old.Columns)
	}
	if len(res.Rows) != 4 {
		t.Fatalf("%d rows after the evolution", len(res.Rows))
	}
	for i, r := range res.Rows {
		if len(r) != len(res.Columns) || r[len(r)-1] != nil {
			t.Fatalf("row %d after the evolution: %v", i, r)
		}
	}
}

// TestLargeResultFallsBack: a result past the bounds of a small one, by
// its rows or by a row's bytes, tried as small because its statement
// reads no table, is computed into the result table, whole and in order;
// its next run goes there at once.
func TestLargeResultFallsBack(t *testing.T) {
	s := threeMonths(t)
	e := newEngine(t, s)
	for _, c := range []struct {
		sql  string
		rows int
	}{
		{`SELECT range AS i, 'x' AS s FROM range(` + fmt.Sprint(boundedRows+1) + `) ORDER BY range DESC`, boundedRows + 1},
		{`SELECT range AS i, repeat('x', ` + fmt.Sprint(boundedRowBytes) + `) AS s FROM range(3) ORDER BY range DESC`, 3},
	} {
		for run := range 2 {
			res := query(t, e, c.sql)
			want := []string{StepDescribe, StepBounded, StepCreate, StepFinish, StepFirstPage}
			if run > 0 {
				want = slices.Delete(want, 1, 2)
			}
			if got := stepNames(res.Header); !slices.Equal(got, want) {
				t.Fatalf("%.60s, run %d: steps %v", c.sql, run, got)
			}
			if len(res.Rows) != c.rows {
				t.Fatalf("%.60s: %d rows", c.sql, len(res.Rows))
			}
			for i, r := range res.Rows {
				if r[0] != int64(c.rows-1-i) {
					t.Fatalf("%.60s: row %d is %v", c.sql, i, r[0])
				}
			}
		}
	}
	// Just within the bounds: small.
	fits := `SELECT range AS i, repeat('x', 100) AS s FROM range(` + fmt.Sprint(boundedRows) + `)`
	res := query(t, e, fits)
	if got := stepNames(res.Header); !slices.Contains(got, StepBounded) || slices.Contains(got, StepCreate) || len(res.Rows) != boundedRows {
		t.Fatalf("%d rows of 100 bytes: steps %v, %d rows", boundedRows, got, len(res.Rows))
	}
}

// TestSmallResultErrors: the errors of a statement tried as small are
// the statement's, as the result table's path gives them: a value past
// maxValueBytes, refused before it is stored, and a failure placed on the
// caller's line.
func TestSmallResultErrors(t *testing.T) {
	s := threeMonths(t)
	e := newEngine(t, s)
	_, err := queryOf(t.Context(), e, `SELECT repeat('x', 67108865) AS big`)
	if err == nil || !strings.Contains(err.Error(), `column "big"`) {
		t.Fatalf("a value past the bound: %v", err)
	}
	_, err = queryOf(t.Context(), e, "SELECT 1 AS a,\n  CAST('x' AS INTEGER) AS b")
	if err == nil || !strings.Contains(err.Error(), "LINE 2:") {
		t.Fatalf("a failing cast on line 2: %v", err)
	}
}

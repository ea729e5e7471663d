package query

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// anchors are the instants the generated rows and constants cluster around:
// month starts, both clock changes of 2026 and a gas day start.
var anchors = []time.Time{
	time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
	time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC),
	time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC),
	time.Date(2026, 10, 25, 0, 59, 59, 999999000, time.UTC),
	time.Date(2026, 10, 1, 4, 0, 0, 0, time.UTC),
}

var offsets = []time.Duration{0, time.Microsecond, time.Second, 15 * time.Minute, time.Hour, 14 * time.Hour, 24 * time.Hour, 31 * 24 * time.Hour}

// instant returns a random instant near an anchor.
func randInstant(r *rand.Rand) time.Time {
	t := anchors[r.IntN(len(anchors))]
	d := offsets[r.IntN(len(offsets))]
	if r.IntN(2) == 0 {
		d = -d
	}
	return t.Add(d)
}

// randConstant returns a constant in one of the spellings a user may
// write, near an anchor.
func randConstant(r *rand.Rand) string {
	t := randInstant(r)
	utc := t.UTC().Format("2006-01-02 15:04:05.999999")
	berlin := t.In(cal.Location()).Format("2006-01-02 15:04:05.999999-07")
	day := t.UTC().Format("2006-01-02")
	switch r.IntN(16) {
	case 0:
		return `'` + utc + `Z'`
	case 1:
		return `'` + berlin + `'`
	case 2:
		return `TIMESTAMPTZ '` + utc + `+00'`
	case 3:
		return `TIMESTAMP '` + utc + `'`
	case 4:
		return `DATE '` + day + `'`
	case 5:
		return `'` + day + `'`
	case 6:
		return `'` + berlin + `'::TIMESTAMPTZ`
	case 7:
		return `'` + utc + `'::DATE`
	case 8:
		return `'` + berlin + `'::TIMESTAMPTZ::DATE`
	case 9:
		return `'` + t.In(cal.Location()).Format("2006-01-02 15:04:05") + ` Europe/Berlin'`
	case 10:
		return `'` + t.UTC().Format("2006-01-02T15:04:05") + `.0000005Z'`
	case 11:
		return `'` + utc + `'`
	case 12:
		return []string{`'infinity'`, `'-infinity'`, `'epoch'`, `'garbage'`}[r.IntN(4)]
	case 13:
		return `CAST('` + utc + `+00' AS TIMESTAMP WITH TIME ZONE)`
	case 14:
		return `TRY_CAST('` + utc + `Z' AS TIMESTAMPTZ)`
	}
	return `'` + utc + `'::TIMESTAMP`
}

var ops = []string{"=", "<", "<=", ">", ">=", "<>"}

// randPredicate returns a random predicate over readings: conjunctions,
// disjunctions and negations of comparisons of "from" and of other
// columns.
// malos are the market locations of the generated rows.
var malos = []string{"a", "b", "c", "d"}

func randPredicate(r *rand.Rand, depth int, from string) string {
	if depth <= 0 || r.IntN(3) == 0 {
		c := randConstant(r)
		m := func() string { return "'" + malos[r.IntN(len(malos))] + "'" }
		switch r.IntN(15) {
		case 0, 1, 2, 3:
			return from + " " + ops[r.IntN(len(ops))] + " " + c
		case 4, 5:
			return c + " " + ops[r.IntN(len(ops))] + " " + from
		case 6:
			return from + " BETWEEN " + c + " AND " + randConstant(r)
		case 7:
			return from + " NOT BETWEEN " + c + " AND " + randConstant(r)
		case 8:
			return fmt.Sprintf("value %s %d", ops[r.IntN(len(ops))], r.IntN(200))
		case 9:
			return "date_trunc('day', " + from + ") " + ops[r.IntN(len(ops))] + " " + c
		case 10:
			return from + " IN (" + c + ", " + randConstant(r) + ")"
		case 11:
			return []string{"malo_id = " + m(), m() + " = malo_id", "r.malo_id = " + m()}[r.IntN(3)]
		case 12:
			return "malo_id IN (" + m() + ", " + m() + ")"
		case 13:
			return []string{"malo_id <> " + m(), "malo_id NOT IN (" + m() + ")", "malo_id > " + m()}[r.IntN(3)]
		}
		return from + " + INTERVAL 1 HOUR " + ops[r.IntN(len(ops))] + " " + c
	}
	a, b := randPredicate(r, depth-1, from), randPredicate(r, depth-1, from)
	switch r.IntN(6) {
	case 0, 1, 2:
		return "(" + a + ") AND (" + b + ")"
	case 3, 4:
		return "(" + a + ") OR (" + b + ")"
	}
	return "NOT (" + a + ")"
}

// TestExtractIsSound evaluates random predicates over a table of rows
// around the anchors in a DuckDB configured as a query's, and checks that
// every row a predicate selects lies in the range extracted from it.
func TestExtractIsSound(t *testing.T) {
	inst, err := open(t.Context(), Settings{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.close()
	var rows []string
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 400 {
		rows = append(rows, fmt.Sprintf("(TIMESTAMPTZ '%s+00', %d, '%s')", randInstant(r).Format("2006-01-02 15:04:05.999999"), i%200, malos[i%len(malos)]))
	}
	for _, a := range anchors {
		for _, d := range []time.Duration{-time.Microsecond, 0, time.Microsecond} {
			rows = append(rows, fmt.Sprintf("(TIMESTAMPTZ '%s+00', 7, 'a')", a.Add(d).Format("2006-01-02 15:04:05.999999")))
		}
	}
	for _, stmt := range []string{
		`CREATE TABLE readings ("from" TIMESTAMPTZ, value INTEGER, malo_id VARCHAR)`,
		`INSERT INTO readings VALUES ` + strings.Join(rows, ", "),
	} {
		if _, err := inst.conn.ExecContext(t.Context(), stmt); err != nil {
			t.Fatal(err)
		}
	}
	n := 3000
	if testing.Short() {
		n = 300
	}
	var bounded, narrowed, checked int
	for range n {
		from := []string{`"from"`, `r."from"`, `"FROM"`}[r.IntN(3)]
		pred := randPredicate(r, 1+r.IntN(3), from)
		sql := `SELECT "from", malo_id FROM readings r WHERE ` + pred
		a, err := analyze(t.Context(), inst.conn, sql, "", nil)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		res, err := inst.conn.QueryContext(t.Context(), sql)
		if err != nil {
			continue // an invalid constant: the statement fails, nothing to bound
		}
		var (
			got   []time.Time
			malos []string
		)
		for res.Next() {
			var (
				v time.Time
				m string
			)
			if err := res.Scan(&v, &m); err != nil {
				t.Fatal(err)
			}
			got, malos = append(got, v), append(malos, m)
		}
		if err := res.Err(); err != nil {
			res.Close()
			continue
		}
		res.Close()
		checked++
		if !a.From.IsZero() || !a.To.IsZero() {
			bounded++
		}
		if a.MaLo != nil {
			narrowed++
		}
		for i, v := range got {
			if v.Before(a.From) || !a.To.IsZero() && !v.Before(a.To) {
				t.Fatalf("unsound: %s\nselects %v outside [%v, %v)", sql, v, a.From, a.To)
			}
			if a.MaLo != nil && !slices.Contains(a.MaLo, malos[i]) {
				t.Fatalf("unsound: %s\nselects market location %s outside %q", sql, malos[i], a.MaLo)
			}
		}
	}
	t.Logf("%d predicates checked, %d of them bounded, %d narrowed to market locations", checked, bounded, narrowed)
	if bounded < checked/5 || narrowed < checked/20 {
		t.Fatalf("only %d of %d predicates bounded: the generator tests too little", bounded, checked)
	}
}

// TestPruningChangesNoAnswer runs random predicates through an engine twice:
// as written, with the range pruning the tiers, and inside a subquery, which
// reads both tiers whole. The answers must agree.
func TestPruningChangesNoAnswer(t *testing.T) {
	s := threeMonths(t)
	e := newEngine(t, s)
	r := rand.New(rand.NewPCG(3, 4))
	n := 150
	if testing.Short() {
		n = 20
	}
	for range n {
		pred := randPredicate(r, 1+r.IntN(2), `"from"`)
		rel := []string{"readings", "readings_versions"}[r.IntN(2)]
		pruned := `SELECT count(*), sum(value), min("from"), max("from") FROM ` + rel + ` WHERE ` + pred
		whole := `SELECT count(*), sum(value), min("from"), max("from") FROM (SELECT * FROM ` + rel + `) WHERE ` + pred
		a, errA := queryOf(t.Context(), e, pruned)
		b, errB := queryOf(t.Context(), e, whole)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("%s: %v\n%s: %v", pruned, errA, whole, errB)
		}
		if errA != nil {
			continue
		}
		if fmt.Sprint(a.Rows) != fmt.Sprint(b.Rows) {
			t.Fatalf("%s\n pruned %v over %v\n  whole %v", pruned, a.Rows, a.Range, b.Rows)
		}
	}
}

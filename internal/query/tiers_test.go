package query

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// threeMonths returns a source with a day of readings of two locations at
// the start of January, February and March 2026, archived up to W =
// March.
func threeMonths(t *testing.T) *memSource {
	s := newSource(t, loadProfile())
	for _, m := range []time.Time{jan2026, feb2026, mar2026} {
		s.addHot(quarterHours(1, m, 96)...)
		s.addHot(quarterHours(2, m, 96)...)
	}
	s.archive(feb2026)
	s.archive(mar2026)
	return s
}

func TestTiersFollowTheRange(t *testing.T) {
	s := threeMonths(t)
	e := newEngine(t, s)
	e.SetRelations([]Relation{{Schema: "system", Name: "tables", Columns: []Column{{"table", "VARCHAR"}}, Rows: [][]any{{"power"}}}})
	for _, c := range []struct {
		sql   string
		n     int64
		tiers []string
		calls []string
	}{
		{`SELECT count(*) FROM readings WHERE "from" >= '2026-03-01 06:00:00Z' AND "from" < '2026-03-01 07:00:00Z'`, 8,
			[]string{"hot"}, []string{"watermark", "hot[2026-03-01T06:00:00,2026-03-01T07:00:00)", "floor"}},
		// Below the W the statement before split at: the cold plan alone
		// (see TestBelowSeenW).
		{`SELECT count(*) FROM readings r WHERE r."from" >= DATE '2026-01-01' AND r."from" < TIMESTAMPTZ '2026-01-01 01:00:00+00'`, 8,
			[]string{"cold"}, []string{"cold[2026-01-01T00:00:00,2026-01-01T01:00:00)"}},
		{`SELECT count(*) FROM readings_versions WHERE "from" BETWEEN '2026-02-01 23:00:00+00' AND '2026-03-01 00:45:00+00'`, 16,
			[]string{"cold", "hot"}, []string{"watermark", "hot[2026-03-01T00:00:00,2026-03-01T00:45:00.000001)",
				"cold[2026-02-01T23:00:00,2026-03-01T00:45:00.000001)", "floor"}},
		{`SELECT count(*) FROM readings`, 576,
			[]string{"cold", "hot"}, []string{"watermark", "hot[2026-03-01T00:00:00,-)", "cold[-,-)", "floor"}},
		{`SELECT count(*) FROM readings WHERE "from" > '2026-03-01 00:00:00Z' AND "from" < '2026-03-01 00:00:00Z'`, 0,
			nil, nil},
		{`SELECT count(*) FROM system.tables`, 1, nil, nil},
	} {
		res := query(t, e, c.sql)
		if n := res.Rows[0][0].(int64); n != c.n {
			t.Errorf("%s: %d, want %d", c.sql, n, c.n)
		}
		if !slices.Equal(res.Tiers, c.tiers) {
			t.Errorf("%s: tiers %v, want %v", c.sql, res.Tiers, c.tiers)
		}
		if got := s.Calls(); !slices.Equal(got, c.calls) {
			t.Errorf("%s: calls\n got %v\nwant %v", c.sql, got, c.calls)
		}
	}
}

func TestNoReadingsNoTiers(t *testing.T) {
	s := threeMonths(t)
	e := newEngine(t, s)
	if got := values(t, e, `SELECT meter_expected_intervals(DATE '2026-03-29', 'PT15M', 'STROM')`); !slices.Equal(got, []string{"92"}) {
		t.Fatalf("got %v", got)
	}
	// A statement that names no relation has none: the tier tables and
	// the relations do not exist, so a reference the analysis missed is
	// an error, never an empty answer.
	if _, err := queryOf(t.Context(), e, `SELECT count(*) FROM tiers.hot`); err == nil {
		t.Error("the tier tables exist in a statement without readings")
	}
	// DESCRIBE and SHOW TABLES need the relations, not their rows.
	if res := query(t, e, `DESCRIBE readings`); len(res.Rows) != 18 || res.Rows[4][0] != "from" {
		t.Fatalf("DESCRIBE readings: %v", res.Rows)
	}
	if got := values(t, e, `SHOW TABLES`); !slices.Contains(got, "readings") || !slices.Contains(got, "readings_versions") {
		t.Fatalf("SHOW TABLES: %v", got)
	}
	if calls := s.Calls(); len(calls) != 0 {
		t.Fatalf("calls %v", calls)
	}
	// query_table names a relation in a string: both tiers are read.
	if n := count(t, e, `SELECT count(*) FROM query_table('readings')`); n != 576 {
		t.Fatalf("query_table: %d", n)
	}
	if calls := s.Calls(); len(calls) == 0 {
		t.Fatal("query_table read no tier")
	}
}

// TestCommitBetweenTheReads archives March after the hot scan and before
// the cold plan: the rows that left the hot tier are in the snapshot
// planned after it.
func TestCommitBetweenTheReads(t *testing.T) {
	s := threeMonths(t)
	e := newEngine(t, s)
	s.after = func(op string) {
		if op == "hot" {
			s.after = nil
			s.archive(apr2026)
		}
	}
	res := query(t, e, `SELECT count(*), count(DISTINCT "from") FROM readings WHERE "from" >= '2026-02-01 00:00:00Z'`)
	if n := res.Rows[0][0].(int64); n != 384 {
		t.Fatalf("%d readings, want 384", n)
	}
	if !res.Watermark.Equal(apr2026) || !slices.Equal(res.Tiers, []string{"cold", "hot"}) {
		t.Fatalf("watermark %v, tiers %v", res.Watermark, res.Tiers)
	}
}

// TestDetachBeforeTheHotScan detaches March before the query and commits
// it only after the engine's first attempt: the first attempt sees the
// rows in neither tier, which the floor reveals, and the retry finds them
// in the cold tier. An archival that does not commit fails the query.
func TestDetachBeforeTheHotScan(t *testing.T) {
	s := threeMonths(t)
	e := newEngine(t, s)
	commit := s.detach(apr2026)
	s.after = func(op string) {
		if op == "floor" {
			s.after = nil
			commit()
		}
	}
	const sql = `SELECT count(*) FROM readings WHERE "from" >= '2026-02-01 00:00:00Z'`
	if n := count(t, e, sql); n != 384 {
		t.Fatalf("%d readings, want 384", n)
	}
	if calls := s.Calls(); len(slices.DeleteFunc(calls, func(c string) bool { return c != "watermark" })) != 2 {
		t.Fatalf("not one retry: %v", calls)
	}

	// Stuck: May is detached and never committed.
	s.addHot(quarterHours(1, apr2026.AddDate(0, 1, 0), 4)...)
	s.detach(apr2026.AddDate(0, 2, 0))
	_, err := queryOf(t.Context(), e, sql)
	if !errors.Is(err, ErrInFlight) {
		t.Fatalf("query over a detached partition: %v, want %v", err, ErrInFlight)
	}
	// A range above the detached partition is not affected, nor one
	// entirely below W.
	if n := count(t, e, `SELECT count(*) FROM readings WHERE "from" >= '2026-06-01 00:00:00Z'`); n != 0 {
		t.Fatal(n)
	}
	if n := count(t, e, `SELECT count(*) FROM readings WHERE "from" < '2026-04-01 00:00:00Z'`); n != 576 {
		t.Fatal(n)
	}
}

func TestColdUnreachable(t *testing.T) {
	s := threeMonths(t)
	s.floor = mar2026
	e := newEngine(t, s)
	down := errors.New("connection refused")

	// The plan fails: a range below W fails loudly.
	s.coldErr = down
	for _, sql := range []string{
		`SELECT count(*) FROM readings`,
		`SELECT count(*) FROM readings WHERE "from" >= '2026-02-15 00:00:00Z'`,
	} {
		_, err := queryOf(t.Context(), e, sql)
		if !errors.Is(err, ErrColdUnreachable) || !errors.Is(err, down) || !strings.Contains(err.Error(), "cold tier is unreachable") {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	// A range at or above W needs no plan.
	res := query(t, e, `SELECT count(*) FROM readings WHERE "from" >= '2026-03-01 00:00:00Z'`)
	if res.Rows[0][0].(int64) != 192 || !slices.Equal(res.Tiers, []string{"hot"}) || !res.HasWatermark {
		t.Fatalf("hot range: %v %v", res.Rows, res.Tiers)
	}

	// The watermark cannot be read: at or above the floor the hot tier
	// answers alone, below it the query fails.
	s.wmErr = down
	s.Calls()
	res = query(t, e, `SELECT count(*) FROM readings WHERE "from" >= '2026-03-01 00:00:00Z'`)
	if res.Rows[0][0].(int64) != 192 || !slices.Equal(res.Tiers, []string{"hot"}) || res.HasWatermark {
		t.Fatalf("hot-only answer: %v %v %v", res.Rows, res.Tiers, res.HasWatermark)
	}
	if got, want := s.Calls(), []string{"watermark", "floor", "hot[2026-03-01T00:00:00,-)", "floor"}; !slices.Equal(got, want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
	for _, sql := range []string{
		`SELECT count(*) FROM readings`,
		`SELECT count(*) FROM readings WHERE "from" >= '2026-02-28 23:45:00Z'`,
	} {
		_, err := queryOf(t.Context(), e, sql)
		if !errors.Is(err, ErrColdUnreachable) || !errors.Is(err, down) {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	// A hot row below W that breaks the tier split shows in a hot-only
	// answer only if it lies above the floor; here it does not.
	s.addHot(reading(9, mar2026.Add(-15*time.Minute), 1))
	if _, err := queryOf(t.Context(), e, `SELECT count(*) FROM readings WHERE "from" >= '2026-02-28 23:45:00Z'`); !errors.Is(err, ErrColdUnreachable) {
		t.Fatal(err)
	}
}

func TestHotScanFailure(t *testing.T) {
	s := threeMonths(t)
	e := newEngine(t, s)
	// A reading whose bigint column does not parse makes the scan fail,
	// when the statement reads that column: only those cross.
	bad := reading(1, apr2026, 1)
	bad.Extra = map[string]string{"channel": "A", "seq": "x"}
	s.addHot(bad)
	if _, err := queryOf(t.Context(), e, `SELECT count(*) FROM readings`); err != nil {
		t.Fatalf("the bad column is not read: %v", err)
	}
	_, err := queryOf(t.Context(), e, `SELECT count(seq) FROM readings`)
	if !errors.Is(err, strconv.ErrSyntax) || !strings.Contains(err.Error(), "hot tier") {
		t.Fatalf("scan with a bad row: %v", err)
	}
}

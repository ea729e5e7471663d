package query

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSettingsApply(t *testing.T) {
	s := threeMonths(t)
	e, err := single(s.tab, s, Settings{Threads: 1, MemoryLimit: "100MB"})
	if err != nil {
		t.Fatal(err)
	}
	got := values(t, e, `SELECT current_setting('threads'), current_setting('memory_limit'), current_setting('TimeZone'), current_setting('temp_directory')`)
	if want := []string{"1 95.3 MiB UTC "}; !slices.Equal(got, want) {
		t.Fatalf("settings %q, want %q", got, want)
	}
	for _, bad := range []Settings{{MemoryLimit: "lots"}, {Threads: -1}} {
		if _, err := single(s.tab, s, bad); err == nil {
			t.Errorf("settings %+v accepted", bad)
		}
	}
}

// TestThreadsPerStatement: a statement that scans cold files runs on the
// threads configured, one that reads the hot tier alone on one thread.
func TestThreadsPerStatement(t *testing.T) {
	s := threeMonths(t)
	e, err := single(s.tab, s, Settings{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, c := range []struct {
		sql, want string
	}{
		{`SELECT current_setting('threads') FROM readings WHERE "from" < '2026-02-01' LIMIT 1`, "2"},
		{`SELECT current_setting('threads') FROM readings WHERE "from" >= '2026-03-01' LIMIT 1`, "1"},
		{`SELECT current_setting('threads')`, "2"},
	} {
		if got := values(t, e, c.sql); !slices.Equal(got, []string{c.want}) {
			t.Errorf("%s: threads %q, want %s", c.sql, got, c.want)
		}
	}
}

// bigSort sorts more strings than 16 MB hold.
const bigSort = `SELECT count(*) FROM (SELECT range::VARCHAR AS s FROM range(3000000) ORDER BY s DESC)`

func TestMemoryLimitFailsAQuery(t *testing.T) {
	s := threeMonths(t)
	e, err := single(s.tab, s, Settings{Threads: 1, MemoryLimit: "16MB"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := queryOf(t.Context(), e, bigSort); err == nil || !strings.Contains(err.Error(), "Out of Memory") {
		t.Fatalf("a big query under a tiny limit: %v", err)
	}
	// The engine is unharmed.
	if n := count(t, e, `SELECT count(*) FROM readings`); n != 576 {
		t.Fatal(n)
	}
}

// TestMaxRows: a result larger than MaxRows fails the query, instead of
// growing without bound in memory; at the bound it answers.
func TestMaxRows(t *testing.T) {
	s := threeMonths(t)
	e, err := single(s.tab, s, Settings{Threads: 1, MaxRows: 100})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := queryOf(t.Context(), e, `SELECT * FROM range(101)`); !errors.Is(err, ErrTooManyRows) {
		t.Fatalf("101 rows under a bound of 100: %v", err)
	}
	res, err := queryOf(t.Context(), e, `SELECT * FROM range(100)`)
	if err != nil || len(res.Rows) != 100 {
		t.Fatalf("100 rows: %v, %v", err, res)
	}
}

func TestSpillIntoTheCacheDir(t *testing.T) {
	s := threeMonths(t)
	dir := t.TempDir()
	e, err := single(s.tab, s, Settings{Threads: 1, MemoryLimit: "16MB", CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if n := count(t, e, bigSort); n != 3000000 {
		t.Fatal(n)
	}
	e.Close() // the instances close after their statements, in the background
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("spill directories left: %v", entries)
	}
}

func TestRelations(t *testing.T) {
	s := threeMonths(t)
	e := newEngine(t, s)
	w := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	e.SetRelations([]Relation{
		{Schema: "system", Name: "tables",
			Columns: []Column{{"table", "VARCHAR"}, {"watermark", "TIMESTAMPTZ"}, {"watermark_lag_seconds", "BIGINT"}, {"healthy", "BOOLEAN"}},
			Rows:    [][]any{{"power", w, int64(86400), true}, {"gas", nil, int64(-1), false}}},
		{Schema: "system", Name: "resolution", Columns: []Column{{"setting", "VARCHAR"}, {"value", "VARCHAR"}},
			Rows: [][]any{{"balancing_day_column", "balancing_day"}}},
		{Name: "notes", Columns: []Column{{"n", "DOUBLE"}}, Rows: [][]any{{1.5}}},
	})
	got := values(t, e, `SELECT t."table", watermark, watermark_lag_seconds, healthy FROM system.tables t ORDER BY 1`)
	if want := []string{"gas NULL -1 false", "power 2026-03-01T00:00:00 86400 true"}; !slices.Equal(got, want) {
		t.Fatalf("system.tables %v", got)
	}
	got = values(t, e, `SELECT value, (SELECT n FROM notes), (SELECT count(*) FROM readings WHERE "from" >= '2026-03-01 00:00:00Z')
		FROM system.resolution WHERE setting = 'balancing_day_column'`)
	if want := []string{"balancing_day 1.5 192"}; !slices.Equal(got, want) {
		t.Fatalf("relations with readings: %v", got)
	}
	// A relation whose rows do not fit fails every query that may read a
	// relation, loudly; one that reads only the tiers does not create the
	// relations, and runs.
	e.SetRelations([]Relation{{Schema: "system", Name: "bad", Columns: []Column{{"a", "BIGINT"}}, Rows: [][]any{{1, 2}}}})
	for _, q := range []string{`SELECT * FROM system.bad`, `SELECT * FROM duckdb_tables()`, `WITH x AS (SELECT 1) SELECT * FROM x`} {
		if _, err := queryOf(t.Context(), e, q); err == nil || !strings.Contains(err.Error(), "system.bad") {
			t.Fatalf("bad relation, %s: %v", q, err)
		}
	}
	if got := values(t, e, `SELECT count(*) FROM readings WHERE "from" >= '2026-03-01 00:00:00Z'`); !slices.Equal(got, []string{"192"}) {
		t.Fatalf("readings beside a bad relation: %v", got)
	}
}

// TestSetRelationsWhileQuerying replaces the relations while queries run:
// each query sees one set of them whole.
func TestSetRelationsWhileQuerying(t *testing.T) {
	s := threeMonths(t)
	e := newEngine(t, s)
	gen := func(n int) []Relation {
		rows := make([][]any, n)
		for i := range rows {
			rows[i] = []any{int64(n)}
		}
		return []Relation{{Schema: "system", Name: "gen", Columns: []Column{{"n", "BIGINT"}}, Rows: rows}}
	}
	e.SetRelations(gen(1))
	var setter, wg sync.WaitGroup
	stop := make(chan struct{})
	setter.Go(func() {
		for n := 2; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			e.SetRelations(gen(n % 50))
		}
	})
	for range 2 {
		wg.Go(func() {
			for range 20 {
				res, err := queryOf(t.Context(), e, `SELECT count(*), coalesce(min(n), 0), coalesce(max(n), 0) FROM system.gen`)
				if err != nil {
					t.Error(err)
					return
				}
				r := res.Rows[0]
				if c, lo, hi := r[0].(int64), r[1].(int64), r[2].(int64); c != lo || lo != hi {
					t.Error(fmt.Sprint("torn relation: ", r))
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	setter.Wait()
}

// TestMaxResultBytes: a result whose rows fit MaxRows but whose bytes do
// not fit MaxResultBytes fails, instead of growing in Go's memory, which
// DuckDB's memory_limit does not bound; a small one under the same bound
// answers.
func TestMaxResultBytes(t *testing.T) {
	s := threeMonths(t)
	e, err := single(s.tab, s, Settings{Threads: 1, MaxResultBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	// 1,000 rows of 4 KiB strings: far below MaxRows, 4 MiB of strings.
	_, err = queryOf(t.Context(), e, `SELECT repeat('x', 4096) AS s FROM range(1000)`)
	if !errors.Is(err, ErrResultTooLarge) {
		t.Fatalf("4 MiB under a bound of 1 MiB: %v", err)
	}
	res, err := queryOf(t.Context(), e, `SELECT repeat('x', 4096) AS s FROM range(100)`)
	if err != nil || len(res.Rows) != 100 {
		t.Fatalf("400 KiB under a bound of 1 MiB: %v", err)
	}
	if _, err := single(s.tab, s, Settings{MaxResultBytes: -1}); err == nil {
		t.Error("a negative MaxResultBytes accepted")
	}
}

// TestTimeout: a query that would run for long is interrupted when
// Settings.Timeout passes, and fails with ErrTimeout and
// context.DeadlineExceeded; the engine answers the next query. The timeout
// is long enough for that next query on a loaded machine, and the long
// query would take hours.
func TestTimeout(t *testing.T) {
	s := threeMonths(t)
	e, err := single(s.tab, s, Settings{Threads: 1, Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := queryOf(t.Context(), e, `SELECT count(*) FROM range(100000000) a, range(100000000) b WHERE a.range + b.range = 7`)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a long query under a 3 s timeout: %v", err)
		}
		// Run again unchanged, it would time out again.
		var r interface{ IsRetryable() bool }
		if !errors.As(err, &r) || r.IsRetryable() {
			t.Errorf("a query timeout is classified as retryable: %v", err)
		}
		t.Log(err)
	case <-time.After(time.Minute): // only so that a broken interrupt cannot hang the test
		t.Fatal("the query was not interrupted")
	}
	if n := count(t, e, `SELECT count(*) FROM readings`); n != 576 {
		t.Fatal(n)
	}
	// The caller's own deadline is the caller's: no ErrTimeout.
	e, err = single(s.tab, s, Settings{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err = queryOf(ctx, e, `SELECT count(*) FROM range(100000000) a, range(100000000) b WHERE a.range + b.range = 7`)
	if errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a long query under the caller's deadline: %v", err)
	}
}

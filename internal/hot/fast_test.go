package hot

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// sqlLog records the statements a pool sends, to tell which path a write
// took.
type sqlLog struct {
	mu    sync.Mutex
	stmts []string
}

func (l *sqlLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.mu.Lock()
	l.stmts = append(l.stmts, d.SQL)
	l.mu.Unlock()
	return ctx
}

func (l *sqlLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// The statements of a pgx batch, which Write pipelines, are logged too.
func (l *sqlLog) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (l *sqlLog) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	l.mu.Lock()
	l.stmts = append(l.stmts, d.SQL)
	l.mu.Unlock()
}

func (l *sqlLog) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// path returns the path the statements since the last call took: "fast",
// "fast, then staged" or "staged".
func (l *sqlLog) path() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	has := func(prefix string) bool {
		return slices.ContainsFunc(l.stmts, func(s string) bool { return strings.HasPrefix(s, prefix) })
	}
	fast, back, staged := has("SAVEPOINT hot_fast"), has("ROLLBACK TO SAVEPOINT hot_fast"), has("CREATE TEMP TABLE")
	l.stmts = nil
	switch {
	case fast && !back && !staged:
		return "fast"
	case fast && back && staged:
		return "fast, then staged"
	case !fast && staged:
		return "staged"
	}
	return fmt.Sprintf("fast %v, rolled back %v, staged %v", fast, back, staged)
}

// tracedTier returns a tier on a fresh database whose statements are logged.
func tracedTier(t *testing.T) (*Tier, *sqlLog, *pgxpool.Pool) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	log := &sqlLog{}
	cfg.ConnConfig.Tracer = log
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	h, err := New(pool, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return h, log, pool
}

// insertAt returns rows with r inserted at index i.
func insertAt(rows []series.Reading, i int, r series.Reading) []series.Reading {
	return slices.Insert(slices.Clone(rows), i, r)
}

// TestFastPath: a batch of new readings goes straight into the table; one
// that a stored row refuses is rolled back to the savepoint and written
// through the staging table, which reports redeliveries as Present and
// names the rows that violate integrity, exactly as without the fast path.
func TestFastPath(t *testing.T) {
	for _, i := range []series.Integrity{series.IntegrityExclusion, series.IntegrityStatement, series.IntegrityWrite} {
		t.Run(i.String(), func(t *testing.T) {
			h, log, _ := tracedTier(t)
			tab := lastgang("lastgang")
			tab.Integrity = i
			declare(t, h, tab)
			stored := meterDay(1, 100)
			log.path()

			t.Run("new readings", func(t *testing.T) {
				rows := append(slices.Clone(stored), meterDay(2, 100)...)
				res := mustWrite(t, h, tab, rows)
				if res.Inserted != len(rows) || res.Present != 0 || slices.ContainsFunc(res.Status, func(s series.Status) bool { return s != series.Inserted }) {
					t.Fatalf("%+v", res)
				}
				if p := log.path(); p != "fast" {
					t.Fatalf("path %q", p)
				}
			})
			t.Run("redelivery among new readings", func(t *testing.T) {
				fix := stored[7] // a correction, under a new version
				fix.Version, fix.Value = 101, 5_000
				rows := append(insertAt(meterDay(3, 100), 50, stored[40]), fix)
				res := mustWrite(t, h, tab, rows)
				if res.Inserted != len(rows)-2 || res.Present != 1 || res.Superseded != 1 {
					t.Fatalf("%+v", res)
				}
				for i, s := range res.Status {
					want := series.Inserted
					switch i {
					case 50:
						want = series.Present
					case len(rows) - 1:
						want = series.Superseded
					}
					if s != want {
						t.Fatalf("row %d: %v, want %v", i, s, want)
					}
				}
				if p := log.path(); p != "fast, then staged" {
					t.Fatalf("path %q", p)
				}
				if n := len(scanAll(t, h, tab)); n != 3*96+1 {
					t.Fatalf("%d rows stored, want %d", n, 3*96+1)
				}
				log.path()
			})
			t.Run("restatement", func(t *testing.T) {
				bad := stored[5]
				bad.Value++
				e := refused(t, h, tab, insertAt(meterDay(4, 100), 30, bad), series.IntegrityViolation, 30)
				if !strings.Contains(e.Problems[0].Reason, "value") {
					t.Fatalf("reason %q", e.Problems[0].Reason)
				}
				if p := log.path(); !strings.HasPrefix(p, "fast, then staged") {
					t.Fatalf("path %q", p)
				}
			})
			t.Run("second network operator", func(t *testing.T) {
				bad := stored[60]
				bad.Version, bad.VersionScope = 102, "9900000000010:2026-03"
				e := refused(t, h, tab, insertAt(meterDay(5, 100), 20, bad), series.IntegrityViolation, 20)
				if !strings.Contains(e.Problems[0].Reason, "network operator 9900000000010") {
					t.Fatalf("reason %q", e.Problems[0].Reason)
				}
				// Without constraints between rows the check after the
				// copy finds it; with them a constraint refuses the copy.
				want := map[bool]string{false: "fast, then staged", true: "fast"}[i == series.IntegrityWrite]
				if p := log.path(); !strings.HasPrefix(p, want) {
					t.Fatalf("path %q, want %q", p, want)
				}
			})
			t.Run("second network operator for a stretch", func(t *testing.T) {
				// Meter 6 is new, meter 1's slots 10 to 20 come from
				// someone else: those eleven rows are named, whichever
				// check finds them.
				var rows []series.Reading
				for _, r := range stored[10:21] {
					r.Version, r.VersionScope = 103, "9900000000010:2026-03"
					rows = append(rows, r)
				}
				rows = append(meterDay(6, 100), rows...)
				var want []int
				for i := 96; i < len(rows); i++ {
					want = append(want, i)
				}
				refused(t, h, tab, rows, series.IntegrityViolation, want...)
				log.path()
			})
			t.Run("repeated within the batch", func(t *testing.T) {
				rows := meterDay(7, 100)
				res := mustWrite(t, h, tab, append(rows, rows[3]))
				if res.Inserted != 96 || res.Present != 1 || res.Status[96] != series.Present {
					t.Fatalf("%+v", res)
				}
				if p := log.path(); p != "fast" {
					t.Fatalf("path %q", p)
				}
			})
		})
	}
}

// TestFastPathEligibility: the tables and batches the fast path leaves to
// the staging table.
func TestFastPathEligibility(t *testing.T) {
	h := offline(t)
	multi := multiResolution()
	point := &series.Table{Name: "register", TimeModel: series.Point, Commodity: metering.Electricity, Width: series.Monthly}
	daily := lastgang("daily")
	daily.Resolutions = nil
	excl, stmt, write := series.IntegrityExclusion, series.IntegrityStatement, series.IntegrityWrite
	for _, c := range []struct {
		tab       *series.Table
		integrity series.Integrity
		want      bool
	}{
		{lastgang("lastgang"), excl, true},
		{lastgang("lastgang"), stmt, true},
		{lastgang("lastgang"), write, true},
		{multi, excl, true}, // as long as no row reaches into another partition
		{multi, write, false},
		{point, excl, true},
		{point, write, false},
		{daily, write, false},
	} {
		b := &batch{rows: []staged{{}}}
		if got := fastPath(c.tab, c.integrity, b); got != c.want {
			t.Errorf("%s, integrity %v: fast path %v, want %v", c.tab.Name, c.integrity, got, c.want)
		}
	}
	// A row whose checks read another partition is probed first.
	b, err := h.prepare(multi, []series.Reading{qh(1, 0, 1, 1)})
	if err != nil {
		t.Fatal(err)
	}
	b.rows[0].probe = true
	if fastPath(multi, excl, b) {
		t.Error("a batch with a row to probe takes the fast path")
	}
}

// TestRuns: the runs of the check after the copy cover exactly the
// intervals of their rows.
func TestRuns(t *testing.T) {
	h := offline(t)
	tab := lastgang("lastgang")
	tab.Integrity = series.IntegrityWrite
	a := meterDay(1, 1)
	other := a[40]
	other.VersionScope = "9900000000010:2026-03"
	rows := slices.Concat(a[:40], []series.Reading{other}, a[41:60], meterDay(2, 1)[:10], a[90:])
	b, err := h.prepare(tab, rows)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range runs(tab, b.rows) {
		got = append(got, fmt.Sprintf("%d+%d %s-%s", r.first, r.n, r.lo.Format("15:04"), r.hi.Format("15:04")))
	}
	want := []string{"0+40 00:00-10:00", "40+1 10:00-10:15", "41+19 10:15-15:00", "60+10 00:00-02:30", "70+6 22:30-00:00"}
	if !slices.Equal(got, want) {
		t.Fatalf("runs %v, want %v", got, want)
	}
}

// TestWriteBatchAtomic100kNoExclusion: in a table without exclusion
// constraints, one row from a second network operator among 100,000 is
// found after they were copied, and nothing is written.
func TestWriteBatchAtomic100kNoExclusion(t *testing.T) {
	h, pool := newTier(t, Options{})
	tab := lastgang("lastgang")
	tab.Integrity = series.IntegrityWrite
	declare(t, h, tab)
	ctx := context.Background()
	stored := meterDay(0, 100)
	mustWrite(t, h, tab, stored)
	var rows []series.Reading
	for i := 1; len(rows) < 100_000; i++ {
		rows = append(rows, meterDay(i, 100)...)
	}
	rows = rows[:100_000]
	bad := stored[17]
	bad.Version, bad.VersionScope = 200, "9900000000010:2026-03"
	rows[50_000] = bad
	_, err := h.Write(ctx, tab, rows)
	wantError(t, err, series.IntegrityViolation, 50_000)
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+h.ident(tab.Name)).Scan(&n); err != nil || n != len(stored) {
		t.Fatalf("%d rows stored after a refused batch, want %d (%v)", n, len(stored), err)
	}
}

// TestStagedLayouts: two tables whose staging tables differ in the type of
// a column of the same name take turns on one connection. pgx caches what
// it learns of a COPY's target by the statement's text, so each layout's
// staging table has a name of its own.
func TestStagedLayouts(t *testing.T) {
	cfg, err := pgxpool.ParseConfig(pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	h, err := New(pool, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var tabs [2]*series.Table
	var rows [2][]series.Reading
	for i, typ := range []series.ColumnType{series.BigInt, series.Text} {
		tabs[i] = lastgang(fmt.Sprintf("t%d", i))
		tabs[i].Columns = []series.Column{{Name: "seq", Type: typ}}
		tabs[i].Integrity = series.IntegrityWrite
		tabs[i].Resolutions = append(tabs[i].Resolutions, metering.Hour) // the staged path
		declare(t, h, tabs[i])
		rows[i] = meterDay(1, 1)
		for j := range rows[i] {
			rows[i][j].Extra = map[string]string{"seq": []string{"42", "x"}[i]}
		}
	}
	for range 2 {
		for i := range tabs {
			mustWrite(t, h, tabs[i], rows[i])
		}
	}
	if stageName(tabs[0], layoutRows) == stageName(tabs[1], layoutRows) || stageName(tabs[0], layoutRows) == stageName(tabs[0], layoutDictionary) {
		t.Fatal("one staging table name for two layouts")
	}
}

package privacy

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/series"
)

const (
	basis = "§ 60 Abs. 6 MsbG"
	actor = "retention-job"
)

func timeUTC(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// sweep runs a sweep and fails the test on an error.
func sweep(t testing.TB, reg *Registry, now time.Time, r Retention) int64 {
	t.Helper()
	n, err := reg.Sweep(context.Background(), now, r, basis, actor)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSweepRefuses(t *testing.T) {
	ctx := context.Background()
	reg, pool := newRegistry(t)
	mustRegister(t, reg, "K-1", timeUTC(2015, 6, 1))
	now := timeUTC(2030, 1, 1)
	for _, c := range []struct {
		now          time.Time
		r            Retention
		basis, actor string
	}{
		{now, Retention{}, basis, actor},
		{now, CalendarYears(0), basis, actor},
		{now, Rolling(0), basis, actor},
		{now, CalendarYears(3), "", actor},
		{now, CalendarYears(3), " \t", actor},
		{now, CalendarYears(3), basis, ""},
		{now, CalendarYears(3), basis, "job\n"},
		{time.Time{}, CalendarYears(3), basis, actor},
	} {
		n, err := reg.Sweep(ctx, c.now, c.r, c.basis, c.actor)
		wantKind(t, err, series.InvalidInput)
		if n != 0 {
			t.Errorf("refused sweep removed %d", n)
		}
	}
	if count(t, pool, reg.subjects) != 1 || count(t, pool, reg.audit) != 0 {
		t.Error("a refused sweep changed the registry or the audit table")
	}
}

// A value collected on 2 January 2025 comes due at 00:00 Berlin time on
// 31 December 2028, which is 23:00 UTC on 30 December.
func TestSweepCalendarYearsBoundary(t *testing.T) {
	ctx := context.Background()
	reg, _ := newRegistry(t)
	loc := berlin(t)
	ref := mustRegister(t, reg, "K-1", time.Date(2025, 1, 2, 8, 0, 0, 0, loc))
	// Collected in 2025 in Berlin, in 2024 in UTC.
	newYear := mustRegister(t, reg, "K-2", time.Date(2024, 12, 31, 23, 30, 0, 0, time.UTC))
	r := CalendarYears(3)

	for _, now := range []time.Time{
		time.Date(2027, 12, 31, 12, 0, 0, 0, loc),                // due date of a 2024 value
		time.Date(2028, 12, 30, 23, 59, 59, 999999000, loc),      // the last instant before
		time.Date(2028, 12, 30, 22, 59, 59, 999999000, time.UTC), // the same instant in UTC
	} {
		if n := sweep(t, reg, now, r); n != 0 {
			t.Fatalf("sweep at %v removed %d, want 0", now, n)
		}
	}
	if _, _, ok, _ := reg.Resolve(ctx, ref); !ok {
		t.Fatal("link removed before its due date")
	}
	// 00:00 on 31 December in Berlin, still 30 December in UTC.
	now := time.Date(2028, 12, 30, 23, 0, 0, 0, time.UTC)
	if !now.Equal(time.Date(2028, 12, 31, 0, 0, 0, 0, loc)) {
		t.Fatal("test premise: Berlin is UTC+1 in December")
	}
	if n := sweep(t, reg, now, r); n != 2 {
		t.Fatalf("sweep at %v removed %d, want 2", now, n)
	}
	for _, ref := range []string{ref, newYear} {
		if _, _, ok, _ := reg.Resolve(ctx, ref); ok {
			t.Errorf("link %q survived its due date", ref)
		}
	}
}

func TestSweepRollingBoundary(t *testing.T) {
	reg, _ := newRegistry(t)
	at := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	mustRegister(t, reg, "K-1", at)
	d := 90 * 24 * time.Hour
	if n := sweep(t, reg, at.Add(d-time.Microsecond), Rolling(d)); n != 0 {
		t.Fatalf("removed %d a microsecond early", n)
	}
	if n := sweep(t, reg, at.Add(d), Rolling(d)); n != 1 {
		t.Fatalf("removed %d at the due instant, want 1", n)
	}
}

func TestSweepAudit(t *testing.T) {
	ctx := context.Background()
	reg, pool := newRegistry(t)
	for i := range 5 {
		mustRegister(t, reg, fmt.Sprintf("K-%d", i), timeUTC(2020+i, 6, 1))
	}
	now := timeUTC(2026, 2, 1)
	if n := sweep(t, reg, now, CalendarYears(3)); n != 3 { // 2020 to 2022
		t.Fatalf("removed %d, want 3", n)
	}
	if n := sweep(t, reg, now, CalendarYears(3)); n != 0 {
		t.Fatalf("repeated sweep removed %d", n)
	}
	rows, _ := pool.Query(ctx, `SELECT at, legal_basis, actor, retention, removed FROM `+reg.audit+` ORDER BY id`)
	type entry struct {
		At                        time.Time
		LegalBasis, Actor, Retent string
		Removed                   int64
	}
	got, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (entry, error) {
		var e entry
		err := row.Scan(&e.At, &e.LegalBasis, &e.Actor, &e.Retent, &e.Removed)
		e.At = e.At.UTC()
		return e, err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []entry{{now, basis, actor, "CalendarYears(3)", 3}, {now, basis, actor, "CalendarYears(3)", 0}}
	if !slices.Equal(got, want) {
		t.Errorf("audit rows %+v, want %+v", got, want)
	}
}

// The sweep's DELETE goes through the index, with statistics that
// describe a realistic registry and, for any cutoff, when sequential scans
// are ruled out.
func TestSweepUsesIndex(t *testing.T) {
	ctx := context.Background()
	reg, pool := newRegistry(t)
	// 26 years of 4000 subject-years, in registration order.
	if _, err := pool.Exec(ctx, `INSERT INTO `+reg.subjects+` (reference, natural_id, collection_year, collected_at)
		SELECT 's_' || i, 'K-' || i, 2015 + i / 4000,
			make_timestamptz(2015 + i / 4000, 1, 1, 0, 0, 0, 'Europe/Berlin') + (i % 4000) * interval '131 minutes'
		FROM generate_series(0, 103999) AS i`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE `+reg.subjects); err != nil {
		t.Fatal(err)
	}
	plan := func(tx pgx.Tx, now time.Time, r Retention) string {
		sql, arg := reg.sweepStatement(now, r)
		var out string
		if err := tx.QueryRow(ctx, `EXPLAIN (FORMAT JSON) `+sql, arg).Scan(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, seqscan := range []bool{true, false} {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		now := timeUTC(2019, 6, 1) // a realistic sweep: 2015 is due
		if !seqscan {
			now = timeUTC(2035, 6, 1) // most of the table is due
			if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			r     Retention
			index string
		}{
			{CalendarYears(3), yearIndex},
			{Rolling(4 * 365 * 24 * time.Hour), collectIndex},
		} {
			p := plan(tx, now, c.r)
			if err := usesOnly(p, c.index); err != nil {
				t.Errorf("enable_seqscan=%v, %v: %v\n%s", seqscan, c.r, err, p)
			}
		}
		tx.Rollback(ctx)
	}
	if n := count(t, pool, reg.subjects); n != 104000 {
		t.Errorf("EXPLAIN changed the registry: %d rows", n)
	}
}

// usesOnly checks that an EXPLAIN (FORMAT JSON) plan scans the registry
// through index and nothing else.
func usesOnly(plan, index string) error {
	var doc []struct{ Plan map[string]any }
	if err := json.Unmarshal([]byte(plan), &doc); err != nil || len(doc) != 1 {
		return fmt.Errorf("unreadable plan: %v", err)
	}
	var scans []string
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		if typ, _ := n["Node Type"].(string); strings.Contains(typ, "Scan") {
			name, _ := n["Index Name"].(string)
			scans = append(scans, typ+" "+name)
		}
		if rel, ok := n["Relation Name"].(string); ok && rel != subjectsTable {
			scans = append(scans, "relation "+rel)
		}
		children, _ := n["Plans"].([]any)
		for _, c := range children {
			if m, ok := c.(map[string]any); ok {
				walk(m)
			}
		}
	}
	walk(doc[0].Plan)
	for _, s := range scans {
		if !strings.HasSuffix(s, " "+index) {
			return fmt.Errorf("scans %v, want only index scans of %s", scans, index)
		}
	}
	if len(scans) == 0 {
		return fmt.Errorf("no scan in plan")
	}
	return nil
}

// recorder is a tracer that keeps the text of every statement.
type recorder struct {
	mu  sync.Mutex
	sql []string
}

func (r *recorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sql = append(r.sql, d.SQL)
	return ctx
}

func (r *recorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.sql
	r.sql = nil
	return out
}

// The sweep names no relation but the registry and the audit table, and
// completes while a reading table is locked against everything.
func TestSweepReadsNoReadingTable(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	pool := newPool(t, rec)
	reg, err := Open(ctx, pool, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustRegister(t, reg, "K-1", timeUTC(2020, 6, 1))
	if _, err := pool.Exec(ctx, `CREATE TABLE meterstore.readings (malo_id text, subject_id text)`); err != nil {
		t.Fatal(err)
	}
	locker, err := pgxpool.New(ctx, pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close()
	tx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `LOCK TABLE meterstore.readings IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}

	rec.take()
	sweepCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if n, err := reg.Sweep(sweepCtx, timeUTC(2026, 1, 1), CalendarYears(3), basis, actor); err != nil || n != 1 {
		t.Fatalf("sweep beside a locked reading table = %d, %v", n, err)
	}
	allowed := []string{reg.subjects, reg.audit}
	qualified := regexp.MustCompile(`"(?:[^"]|"")+"\."(?:[^"]|"")+"`)
	var statements int
	for _, sql := range rec.take() {
		switch strings.ToLower(strings.TrimSpace(sql)) {
		case "begin", "commit", "rollback":
			continue
		}
		statements++
		names := qualified.FindAllString(sql, -1)
		if len(names) != 1 || !slices.Contains(allowed, names[0]) {
			t.Errorf("statement names %v: %s", names, sql)
		}
		if strings.Contains(sql, "readings") {
			t.Errorf("statement mentions readings: %s", sql)
		}
	}
	if statements != 2 {
		t.Errorf("%d statements, want a DELETE and an INSERT", statements)
	}
}

// For random collection instants over 2015-2040 and random sweep
// instants, a sweep removes exactly the links whose due date has come,
// computed here by the rule itself: 31 December of the collection year
// plus n, Berlin time, or the earliest collection instant plus d.
func TestSweepProperty(t *testing.T) {
	ctx := context.Background()
	reg, pool := newRegistry(t)
	loc := berlin(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))

	// instant returns a random microsecond in [lo, hi) years, half of them
	// within three hours of a Berlin new year or of 31 December.
	instant := func(lo, hi int) time.Time {
		if rng.IntN(2) == 0 {
			start := time.Date(lo, 1, 1, 0, 0, 0, 0, loc)
			span := time.Date(hi, 1, 1, 0, 0, 0, 0, loc).Sub(start)
			return start.Add(time.Duration(rng.Int64N(int64(span/time.Microsecond))) * time.Microsecond)
		}
		edge := time.Date(lo+rng.IntN(hi-lo), 1, 1, 0, 0, 0, 0, loc)
		if rng.IntN(2) == 0 {
			edge = edge.AddDate(0, 0, -1) // 00:00 on 31 December
		}
		return edge.Add(time.Duration(rng.Int64N(int64(6*time.Hour/time.Microsecond))-int64(3*time.Hour/time.Microsecond)) * time.Microsecond)
	}
	type link struct {
		year  int
		first time.Time
	}
	// onOrBefore reports whether day (y1, m1, d1) is on or before (y2, m2, d2).
	onOrBefore := func(y1 int, m1 time.Month, d1, y2 int, m2 time.Month, d2 int) bool {
		if y1 != y2 {
			return y1 < y2
		}
		if m1 != m2 {
			return m1 < m2
		}
		return d1 <= d2
	}

	for round := range 40 {
		if _, err := pool.Exec(ctx, `TRUNCATE `+reg.subjects); err != nil {
			t.Fatal(err)
		}
		links := map[string]link{} // by reference
		byKey := map[string]string{}
		for range 150 {
			id := fmt.Sprintf("K-%d", rng.IntN(100))
			at := instant(2015, 2041)
			ref := mustRegister(t, reg, id, at)
			key := fmt.Sprintf("%s/%d", id, at.In(loc).Year())
			if prev, ok := byKey[key]; ok && prev != ref {
				t.Fatalf("%s registered as %q and %q", key, prev, ref)
			}
			byKey[key] = ref
			l, ok := links[ref]
			if !ok || at.Before(l.first) {
				l.first = at
			}
			l.year = at.In(loc).Year()
			links[ref] = l
		}

		var r Retention
		var due func(l link, now time.Time) bool
		if round%4 == 3 {
			d := time.Duration(rng.Int64N(int64(10*365*24*time.Hour/time.Microsecond))) * time.Microsecond
			r = Rolling(d)
			due = func(l link, now time.Time) bool { return !l.first.After(now.Add(-d)) }
		} else {
			r = CalendarYears(3)
			due = func(l link, now time.Time) bool {
				y, m, d := now.In(loc).Date()
				return onOrBefore(l.year+3, time.December, 31, y, m, d)
			}
		}
		nows := []time.Time{instant(2015, 2046), instant(2015, 2046)}
		slices.SortFunc(nows, time.Time.Compare)
		for _, now := range nows {
			want := map[string]bool{}
			var wantRemoved int64
			for ref, l := range links {
				if due(l, now) {
					wantRemoved++
					delete(links, ref)
				} else {
					want[ref] = true
				}
			}
			removed := sweep(t, reg, now, r)
			rows, _ := pool.Query(ctx, `SELECT reference FROM `+reg.subjects)
			left, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, ref := range left {
				got[ref] = true
			}
			if removed != wantRemoved || len(got) != len(want) || !maps.Equal(got, want) {
				t.Fatalf("round %d, %v at %v (Berlin %v): removed %d, want %d; %d left, want %d",
					round, r, now, now.In(loc), removed, wantRemoved, len(got), len(want))
			}
		}
	}
}

package hot

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/series"
)

// TestDayAggregate checks that the day sums through the aggregate of days
// equal GROUP BY over the winning readings in the same snapshot, in each
// dictionary layout: after a refresh (all stored), after corrections by
// Write and by a plain SQL INSERT (stored and dirty mixed), after a read
// of one partition refreshed only that one, while a writer corrects
// concurrently, and for a table declared before the aggregate existed.
func TestDayAggregate(t *testing.T) {
	for _, lay := range dictLayouts {
		t.Run(lay.String(), func(t *testing.T) { testDayAggregate(t, lay) })
	}
}

func testDayAggregate(t *testing.T, lay layout) {
	ctx := t.Context()
	h, pool := dictTier(t, lay)
	tab := readTable(t, h, "agg", series.IntegrityStatement)
	rows := readRows(3, 3, 100)
	mustWrite(t, h, tab, rows)
	// The first read sums from the readings and refreshes for the next.
	sameDays(t, h, tab, series.Range{})
	if n := countRows(t, pool, dirtyName(tab)); n != 0 {
		t.Fatalf("%d dirty rows after a refresh", n)
	}
	if n := countRows(t, pool, daysName(tab)); n == 0 {
		t.Fatal("no day sums stored after a refresh")
	}
	sameDays(t, h, tab, series.Range{}) // all stored

	// Corrections, by Write and by a client's plain INSERT, leave dirty
	// rows the next read sums from the readings.
	plainCorrection(t, pool, lay, tab, day.Add(24*time.Hour+7*time.Hour))
	if n := countRows(t, pool, dirtyName(tab)); n == 0 {
		t.Fatal("a plain INSERT left no dirty row")
	}
	sameDays(t, h, tab, series.Range{})
	mustWrite(t, h, tab, corrections(rows, 300, 0, 5))
	if n := countRows(t, pool, dirtyName(tab)); n == 0 {
		t.Fatal("a Write left no dirty rows")
	}
	plainCorrection(t, pool, lay, tab, day.Add(24*time.Hour+8*time.Hour))
	// A read of the first partition refreshes only it: the dirty rows of
	// the others, which it did not sum, stay.
	sameDays(t, h, tab, series.Range{From: day, To: day.AddDate(0, 0, 1)})
	plainCorrection(t, pool, lay, tab, day.Add(48*time.Hour+9*time.Hour))
	sameDays(t, h, tab, series.Range{})
	sameDays(t, h, tab, series.Range{})

	// A writer corrects while reads compare, each in its snapshot.
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	wg.Go(func() {
		for v := range 8 {
			if _, err := h.Write(context.Background(), tab, corrections(rows, uint64(400+v), v, 3)); err != nil {
				errs <- err
				return
			}
		}
	})
	for range 6 {
		sameDays(t, h, tab, series.Range{})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	sameDays(t, h, tab, series.Range{})
	sameDays(t, h, tab, series.Range{})

	// A table declared by a version without the aggregate: its next
	// ensure creates it, every series dirty, and the first refresh fills
	// it.
	for _, s := range []string{`DROP TABLE meterstore.` + daysName(tab), `DROP TABLE meterstore.` + dirtyName(tab),
		`CREATE OR REPLACE FUNCTION meterstore.` + checkFunc(tab) + `() RETURNS trigger LANGUAGE plpgsql AS $f$BEGIN RETURN NULL; END$f$`} {
		if _, err := pool.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, h, tab, corrections(rows, 600, 1, 4))
	if err := h.Ensure(ctx, tab); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, pool, dirtyName(tab)); n == 0 {
		t.Fatal("an upgraded table has no dirty rows")
	}
	sameDays(t, h, tab, series.Range{})
	mustWrite(t, h, tab, corrections(rows, 700, 2, 4))
	sameDays(t, h, tab, series.Range{})
	sameDays(t, h, tab, series.Range{})
	if n := countRows(t, pool, daysName(tab)); n == 0 {
		t.Fatal("no day sums stored after the upgrade's refresh")
	}
}

// sameDays compares the day sums of tab in q with GROUP BY over the
// winning readings, in one snapshot.
func sameDays(t *testing.T, h *Tier, tab *series.Table, q series.Range) {
	t.Helper()
	s, r, err := h.OpenSnapshotRead(t.Context(), 2, tab, q)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := daySumsOf(t, readAll(t, r, true), time.Time{})
	got := scanDays(t, r, r.DayColumns(), time.Time{})
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Fatalf("day sums\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// corrections returns every k-th reading of rows from the i-th on under
// version v, with another value.
func corrections(rows []series.Reading, v uint64, i, k int) []series.Reading {
	var out []series.Reading
	for ; i < len(rows); i += k {
		r := rows[i]
		if r.Version != 100 {
			continue
		}
		r.Version, r.Value = v, r.Value+series.Decimal(v*1000)
		out = append(out, r)
	}
	return out
}

// plainCorrection inserts, with plain SQL as psql would, a higher version
// of the newest reading at from, with another value.
func plainCorrection(t *testing.T, pool *pgxpool.Pool, lay layout, tab *series.Table, from time.Time) {
	t.Helper()
	var cols []string
	err := pool.QueryRow(t.Context(), `SELECT array_agg(quote_ident(attname) ORDER BY attnum) FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped`,
		"meterstore."+tab.Name).Scan(&cols)
	if err != nil {
		t.Fatal(err)
	}
	sel := slices.Clone(cols)
	for i, c := range sel {
		switch c {
		case "version":
			sel[i] = "version + 1000000"
		case "value":
			sel[i] = "value + 77"
		}
	}
	start, at := `"from"`, any(from)
	if lay == layoutStep {
		start, at = "step", int32(from.Unix()/900)
	}
	tag, err := pool.Exec(t.Context(), `INSERT INTO meterstore.`+tab.Name+` (`+strings.Join(cols, ", ")+`) SELECT `+strings.Join(sel, ", ")+
		` FROM meterstore.`+tab.Name+` WHERE `+start+` = $1 ORDER BY series, version DESC LIMIT 1`, at)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("plain INSERT of a correction: %v, %v", tag, err)
	}
}

// countRows returns the number of rows of relation name in schema
// meterstore.
func countRows(t *testing.T, pool *pgxpool.Pool, name string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(t.Context(), fmt.Sprintf(`SELECT count(*) FROM meterstore.%s`, quote(name))).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRefreshVacuumsDirtyLog: a read that folds the dirty log into the
// day sums has the log vacuumed once its snapshot has ended, so that the
// next reads' probes do not walk the rows it deleted; a read that finds
// the log empty has nothing vacuumed. The count is of manual vacuums,
// not autovacuum's.
func TestRefreshVacuumsDirtyLog(t *testing.T) {
	h, pool := dictTier(t, layoutStep)
	tab := readTable(t, h, "vac", series.IntegrityStatement)
	mustWrite(t, h, tab, readRows(3, 3, 100))
	vacuums := func() int64 {
		var n int64
		if err := pool.QueryRow(t.Context(), `SELECT coalesce((SELECT vacuum_count FROM pg_stat_user_tables WHERE relid = $1::regclass), 0)`,
			h.ident(dirtyName(tab))).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// waitVacuums waits, bounded, for the vacuum count to reach want.
	waitVacuums := func(want int64) int64 {
		deadline := time.Now().Add(10 * time.Second)
		n := vacuums()
		for n < want && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			n = vacuums()
		}
		return n
	}
	before := vacuums()
	sameDays(t, h, tab, series.Range{}) // folds the log
	if n := countRows(t, pool, dirtyName(tab)); n != 0 {
		t.Fatalf("%d dirty rows after a refresh", n)
	}
	if n := waitVacuums(before + 1); n != before+1 {
		t.Fatalf("the dirty log was vacuumed %d times after a read folded it, want 1", n-before)
	}
	sameDays(t, h, tab, series.Range{}) // finds it empty
	time.Sleep(200 * time.Millisecond)
	if n := vacuums(); n != before+1 {
		t.Errorf("a read that folded nothing had the dirty log vacuumed (%d vacuums, want 1)", n-before)
	}
}

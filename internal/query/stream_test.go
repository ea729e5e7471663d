package query

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestStreamPastTheBounds: a result past MaxRows and MaxResultBytes, which
// Query refuses, streams whole; the header, watermark and tiers included,
// comes before the first row.
func TestStreamPastTheBounds(t *testing.T) {
	s := threeMonths(t)
	e, err := single(s.tab, s, Settings{Threads: 1, MaxRows: 100, MaxResultBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	const big = `SELECT range AS i, repeat('x', 100) AS s FROM range(50000)`
	if _, err := queryOf(t.Context(), e, big); !errors.Is(err, ErrTooManyRows) {
		t.Fatalf("Query of 50,000 rows under a bound of 100: %v", err)
	}
	var (
		hdr  *Header
		n    int
		sum  int64
		errs []string
	)
	start := func(h *Header) error {
		if hdr != nil || n > 0 {
			errs = append(errs, "start called twice or after a row")
		}
		hdr = h
		return nil
	}
	row := func(v []any) error {
		if hdr == nil {
			errs = append(errs, "a row before the header")
		}
		i, _ := v[0].(int64)
		if s, _ := v[1].(string); len(s) != 100 {
			errs = append(errs, "a string of the wrong length")
		}
		sum += i
		n++
		return nil
	}
	if err := streamOf(t.Context(), e, big, start, row); err != nil {
		t.Fatal(err)
	}
	if n != 50000 || sum != 50000*49999/2 || len(errs) > 0 {
		t.Fatalf("%d rows, sum %d; %v", n, sum, errs)
	}
	if !slices.Equal(hdr.Columns, []string{"i", "s"}) || !slices.Equal(hdr.Types, []string{"BIGINT", "VARCHAR"}) {
		t.Errorf("header %+v", hdr)
	}

	// Over both tiers: the header says what Query's result says.
	const all = `SELECT * FROM readings_versions`
	want, err := single(s.tab, s, Settings{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	res := query(t, want, all)
	if _, err := queryOf(t.Context(), e, all); !errors.Is(err, ErrTooManyRows) {
		t.Fatalf("Query of %d rows under a bound of 100: %v", len(res.Rows), err)
	}
	hdr, n = nil, 0
	var got [][]any
	err = streamOf(t.Context(), e, all, start, func(v []any) error {
		got = append(got, slices.Clone(v))
		return nil
	})

	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(res.Rows) || len(got) != 576 {
		t.Fatalf("%d rows streamed, %d queried", len(got), len(res.Rows))
	}
	if !slices.Equal(hdr.Tiers, []string{"cold", "hot"}) || !slices.Equal(hdr.Tiers, res.Tiers) ||
		hdr.HasWatermark != res.HasWatermark || !hdr.Watermark.Equal(res.Watermark) || !hdr.Watermark.Equal(mar2026) ||
		!slices.Equal(hdr.Columns, res.Columns) || !slices.Equal(hdr.Types, res.Types) {
		t.Errorf("header %+v\nwant the result's %+v", hdr, res.Header)
	}
}

// TestStreamStopsEarly: an error from row ends the stream, Stream returns
// it, and the query's instance is gone: its spill directory removed.
func TestStreamStopsEarly(t *testing.T) {
	s := threeMonths(t)
	dir := t.TempDir()
	e, err := single(s.tab, s, Settings{Threads: 1, CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	errStop := errors.New("enough")
	spills, n := -1, 0
	err = streamOf(t.Context(), e, `SELECT * FROM range(1000000)`, func(*Header) error {
		entries, _ := os.ReadDir(dir)
		spills = len(entries)
		return nil
	}, func([]any) error {
		if n++; n == 5 {
			return errStop
		}
		return nil
	})

	if !errors.Is(err, errStop) || n != 5 {
		t.Fatalf("after %d rows: %v", n, err)
	}
	if spills != 1 {
		t.Fatalf("%d spill directories during the stream; want 1", spills)
	}
	e.Close() // the instances close after their statements, in the background
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("spill directories left: %v", entries)
	}
	// An error from start ends it before any row.
	n = 0
	err = streamOf(t.Context(), e, `SELECT 1`, func(*Header) error { return errStop }, func([]any) error { n++; return nil })
	if !errors.Is(err, errStop) || n != 0 {
		t.Fatalf("start failed: %d rows, %v", n, err)
	}
}

// TestStreamCancel: canceling the context mid-stream ends it within a
// chunk of rows, with the context's error; so does Settings.Timeout, with
// ErrTimeout.
func TestStreamCancel(t *testing.T) {
	s := threeMonths(t)
	e, err := single(s.tab, s, Settings{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	const big = `SELECT * FROM range(1000000)`
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	n := 0
	err = streamOf(ctx, e, big, func(*Header) error { return nil }, func([]any) error {
		if n++; n == 10 {
			cancel()
		}
		return nil
	})

	if !errors.Is(err, context.Canceled) || n > 10+1024 {
		t.Fatalf("canceled after 10 rows: %d rows, %v", n, err)
	}

	e, err = single(s.tab, s, Settings{Threads: 1, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	n = 0
	err = streamOf(t.Context(), e, big, func(*Header) error { return nil }, func([]any) error {
		if n++; n == 1 {

			time.Sleep(300 * time.Millisecond)
		}
		return nil
	})

	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) || n > 1024 {
		t.Fatalf("a stream past its timeout: %d rows, %v", n, err)
	}
}

// TestInvalidQuery: a statement DuckDB cannot parse or bind fails with
// ErrInvalidQuery, naming the problem, and is not retryable; so does one
// that fails on its own values while running (error(), a failed cast):
// the statement is to blame, and running it again fails again.
func TestInvalidQuery(t *testing.T) {
	s := threeMonths(t)
	e := newEngine(t, s)
	for sql, want := range map[string]string{
		`SELECT nonexistent FROM readings`:         "nonexistent",
		`SELECT malo_id FROM nonexistent_table`:    "nonexistent_table",
		`SELECT no_such_function(1)`:               "no_such_function",
		`SELEC 1`:                                  "SELEC",
		`SELECT count(*) FROM readings WHERE (`:    "syntax error",
		`SELECT malo_id + 1 FROM readings LIMIT 1`: "malo_id",
	} {
		_, err := queryOf(t.Context(), e, sql)
		if !errors.Is(err, ErrInvalidQuery) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want ErrInvalidQuery naming %q", sql, err, want)
			continue
		}
		var r interface{ IsRetryable() bool }
		if !errors.As(err, &r) || r.IsRetryable() {
			t.Errorf("%s: %v is retryable", sql, err)
		}
	}
	for _, sql := range []string{`SELECT error('boom')`, `SELECT CAST('x' AS INTEGER)`, `SELECT CAST(malo_id AS INTEGER) FROM readings LIMIT 1`} {
		if _, err := queryOf(t.Context(), e, sql); !errors.Is(err, ErrInvalidQuery) {
			t.Errorf("%s: %v; want ErrInvalidQuery", sql, err)
		}
	}
}

// TestStreamLargerThanMemory: a result larger than MemoryLimit streams
// whole and in the statement's order, DuckDB keeping it in the spill
// directory rather than in memory; a repeated column name stays repeated.
func TestStreamLargerThanMemory(t *testing.T) {
	s := threeMonths(t)
	dir := t.TempDir()
	e, err := single(s.tab, s, Settings{Threads: 1, MemoryLimit: "64MB", CacheDir: dir, MaxRows: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	// About 250 MB of strings, in descending order, ten times MaxRows.
	const n = 1_000_000
	if max := e.maxRows(); n < 10*max {
		t.Fatalf("the result of %d rows is not several times MaxRows %d", n, max)
	}
	var (
		hdr     *Header
		seen    int64
		ordered = true
		spilled int64
		ms      runtime.MemStats
	)
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapInuse, ms.HeapInuse
	err = streamOf(t.Context(), e, `SELECT range AS i, repeat('x', 200) AS i FROM range(1000000) ORDER BY range DESC;`,
		func(h *Header) error { hdr = h; return nil },
		func(v []any) error {
			if i, _ := v[0].(int64); i != n-1-seen {
				ordered = false
			}
			if seen++; seen == n/2 {
				spilled = dirSize(t, dir)
			}
			if seen%50_000 == 0 {
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
			return nil
		})

	if err != nil {
		t.Fatal(err)
	}
	if seen != n || !ordered || !slices.Equal(hdr.Columns, []string{"i", "i"}) {
		t.Fatalf("%d rows, in order %v, columns %v", seen, ordered, hdr.Columns)
	}
	// Reading no table, it was tried as a small result first, within
	// the same bounds.
	if steps := stepNames(*hdr); !slices.Contains(steps, StepBounded) || !slices.Contains(steps, StepCreate) {
		t.Errorf("steps %v: not tried as a small result first", steps)
	}
	// Go holds a page of rows, not the result.
	t.Logf("%d rows of ~%d MB streamed; Go heap in use peaked %.1f MB above the %.1f MB before", n, n*208>>20,
		float64(peak-base)/(1<<20), float64(base)/(1<<20))
	if peak-base > 64<<20 {
		t.Errorf("the Go heap grew by %d MB while streaming: the result is held", (peak-base)>>20)
	}
	if spilled < 100<<20 {
		t.Errorf("%d bytes spilled mid-stream; want the result there", spilled)
	}
	e.Close() // the instances close after their statements, in the background
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("spill directories left: %v", entries)
	}
}

// dirSize returns the bytes of the files under dir.
func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

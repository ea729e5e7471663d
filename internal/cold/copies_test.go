package cold

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
)

// TestCopiesBounded copies six objects of a remote bucket into copies
// bounded to three of them, on a clock of its own: a new copy past the
// bound removes the copies used longest ago (by their last use, not their
// making), never one used within the idle time, whatever the bound, nor
// one another process used since this one looked; copies left
// half-written go once idle; nothing else in the directory is touched.
func TestCopiesBounded(t *testing.T) {
	const size = 4096
	ctx := t.Context()
	dir := t.TempDir()
	var hits, misses, removed int
	var kept int64
	c := NewCopies(CopyOptions{Dir: dir, MaxBytes: 3 * size,
		Looked: func(hit bool) {
			if hit {
				hits++
			} else {
				misses++
			}
		},
		Trimmed: func(k int64, r int) { kept, removed = k, removed+r },
	})
	if c.idle != MinCopyIdle {
		t.Fatalf("idle %v, want %v", c.idle, MinCopyIdle)
	}
	base := time.Now()
	at := func(d time.Duration) { c.now = func() time.Time { return base.Add(d) } }
	fsys, err := icebergio.LoadFS(ctx, nil, "mem://copies-test-bucket/")
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"a", "b", "c", "d", "e", "f"}
	loc := map[string]string{}
	for _, name := range names {
		l := "mem://copies-test-bucket/data/" + name + ".parquet"
		if err := fsys.(icebergio.WriteFileIO).WriteFile(l, bytes.Repeat([]byte(name), size)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fsys.Remove(l) })
		loc[name] = l
	}
	paths := map[string]string{}
	localize := func(name string) {
		t.Helper()
		p, err := c.Localize(ctx, fsys, loc[name])
		if err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, bytes.Repeat([]byte(name), size)) {
			t.Fatalf("copy of %s: %d bytes, %v", name, len(got), err)
		}
		paths[name] = p
	}
	want := func(step string, present ...string) {
		t.Helper()
		for _, name := range names {
			p, ok := paths[name]
			if !ok {
				continue
			}
			_, err := os.Stat(p)
			if in := slices.Contains(present, name); (err == nil) != in {
				t.Fatalf("%s: copy of %s present %v, want %v", step, name, err == nil, in)
			}
		}
	}
	setTime := func(p string, when time.Time) {
		t.Helper()
		if err := os.Chtimes(p, when, when); err != nil {
			t.Fatal(err)
		}
	}
	// What else lives there, old: spill directories, the copies of day
	// sums, a file of another name.
	old := base.Add(-48 * time.Hour)
	others := []string{filepath.Join(dir, "spill-123"), filepath.Join(dir, "hot-days"), filepath.Join(dir, "notes.parquet")}
	for _, o := range others[:2] {
		if err := os.Mkdir(o, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(others[2], bytes.Repeat([]byte("x"), 10*size), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, o := range others {
		setTime(o, old)
	}

	at(0)
	localize("a")
	at(time.Hour)
	localize("b")
	at(2 * time.Hour)
	localize("c")
	want("within the bound", "a", "b", "c")

	at(4 * time.Hour)
	localize("a") // used again: now the most recent
	localize("d")
	want("past the bound", "a", "c", "d")

	// Another process uses c after this one read the directory: c stays,
	// and so does everything else, used within the hour.
	at(4*time.Hour + time.Minute)
	setTime(paths["c"], base.Add(4*time.Hour+time.Minute))
	localize("e")
	want("c used by another process", "a", "c", "d", "e")
	at(4*time.Hour + 2*time.Minute)
	localize("b")
	want("every copy in use", "a", "b", "c", "d", "e")

	// A copy a process left half-written goes once idle; one being
	// written stays. Past the bound, only so many copies go as it takes.
	at(6 * time.Hour)
	stale, fresh := filepath.Join(dir, copyTemp+"1"), filepath.Join(dir, copyTemp+"2")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	setTime(stale, old)
	setTime(fresh, base.Add(6*time.Hour))
	at(6*time.Hour - time.Minute)
	localize("e")
	at(6 * time.Hour)
	localize("f")
	want("after the hour", "b", "e", "f")
	if _, err := os.Stat(stale); err == nil {
		t.Fatal("a half-written copy of two days ago stayed")
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Fatalf("a copy being written went: %v", err)
	}
	for _, o := range others {
		if _, err := os.Stat(o); err != nil {
			t.Fatalf("%s, no copy, went: %v", o, err)
		}
	}
	if hits != 2 || misses != 7 || removed != 4 || kept != 3*size {
		t.Fatalf("observed %d hits, %d misses, %d removed, %d bytes kept; want 2, 7, 4, %d", hits, misses, removed, kept, 3*size)
	}
}

// TestCopiesConcurrent localizes six objects from eight goroutines at
// once into copies bounded to two, on a clock that moves half an hour a
// reading, so that copies are made, used and removed all at once (run it
// with -race): every lookup succeeds, and the index holds what the
// directory holds.
func TestCopiesConcurrent(t *testing.T) {
	const size = 1024
	ctx := t.Context()
	dir := t.TempDir()
	var removed atomic.Int64
	c := NewCopies(CopyOptions{Dir: dir, MaxBytes: 2 * size, Trimmed: func(_ int64, r int) { removed.Add(int64(r)) }})
	var ticks atomic.Int64
	base := time.Now()
	c.now = func() time.Time { return base.Add(time.Duration(ticks.Add(1)) * 30 * time.Minute) }
	fsys, err := icebergio.LoadFS(ctx, nil, "mem://copies-concurrent-bucket/")
	if err != nil {
		t.Fatal(err)
	}
	var locs []string
	for i := range 6 {
		l := fmt.Sprintf("mem://copies-concurrent-bucket/data/%d.parquet", i)
		if err := fsys.(icebergio.WriteFileIO).WriteFile(l, bytes.Repeat([]byte{byte(i)}, size)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fsys.Remove(l) })
		locs = append(locs, l)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 30 {
				if _, err := c.Localize(ctx, fsys, locs[(g+i)%len(locs)]); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var onDisk int64
	files := 0
	for _, e := range entries {
		if !isCopyName(e.Name()) {
			t.Errorf("left in the directory: %s", e.Name())
			continue
		}
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		onDisk += info.Size()
		files++
		if _, ok := c.known[e.Name()]; !ok {
			t.Errorf("copy %s is not in the index", e.Name())
		}
	}
	if c.total != onDisk || len(c.known) != files {
		t.Fatalf("the index holds %d copies, %d bytes; the directory %d, %d bytes", len(c.known), c.total, files, onDisk)
	}
	if ticks.Load() < 8*30 || removed.Load() == 0 {
		t.Fatalf("the clock was read %d times, %d copies removed", ticks.Load(), removed.Load())
	}
}

// BenchmarkCopiesTrim times what a new copy costs Copies with 10,000
// copies in the directory, none removed: from its index, and when it reads
// the directory afresh (once every copyRescan).
func BenchmarkCopiesTrim(b *testing.B) {
	dir := b.TempDir()
	for i := range 10_000 {
		name := fmt.Sprintf("%064x.parquet", i)
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	name := fmt.Sprintf("%064x.parquet", 0)
	for _, rescan := range []bool{false, true} {
		b.Run(map[bool]string{false: "index", true: "rescan"}[rescan], func(b *testing.B) {
			c := NewCopies(CopyOptions{Dir: dir})
			c.trim(name, 0)
			for b.Loop() {
				if rescan {
					c.scanned = time.Time{}
				}
				c.trim(name, 0)
			}
		})
	}
}

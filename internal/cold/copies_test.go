package cold

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
)

// TestCopiesBounded copies five objects of a remote bucket into copies
// bounded to three of them: a new copy past the bound removes the copy
// used longest ago (by its last use, not its making), never one used
// within the idle time, whatever the bound; copies left half-written go
// once idle; nothing else in the directory is touched.
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
	fsys, err := icebergio.LoadFS(ctx, nil, "mem://copies-test-bucket/")
	if err != nil {
		t.Fatal(err)
	}
	loc := map[string]string{}
	for _, name := range []string{"a", "b", "c", "d", "e"} {
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
	usedAgo := func(name string, d time.Duration) {
		t.Helper()
		at := time.Now().Add(-d)
		if err := os.Chtimes(paths[name], at, at); err != nil {
			t.Fatal(err)
		}
	}
	want := func(step string, present ...string) {
		t.Helper()
		in := map[string]bool{}
		for _, n := range present {
			in[n] = true
		}
		for name, p := range paths {
			if _, err := os.Stat(p); (err == nil) != in[name] {
				t.Fatalf("%s: copy of %s present %v, want %v", step, name, err == nil, in[name])
			}
		}
	}
	// What else lives there, old: spill directories, the copies of day
	// sums, a file of another name.
	old := time.Now().Add(-48 * time.Hour)
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
		if err := os.Chtimes(o, old, old); err != nil {
			t.Fatal(err)
		}
	}

	localize("a")
	localize("b")
	localize("c")
	want("within the bound", "a", "b", "c")
	usedAgo("a", 4*time.Hour)
	usedAgo("b", 3*time.Hour)
	usedAgo("c", 2*time.Hour)
	localize("a") // used again: now the most recent
	localize("d")
	want("past the bound", "a", "c", "d")

	localize("e")
	want("past the bound again", "a", "d", "e")

	// Everything used within the idle time stays beyond the bound.
	localize("b")
	want("every copy in use", "a", "b", "d", "e")

	// A copy a process left half-written goes once idle; one being
	// written stays.
	stale, fresh := filepath.Join(dir, copyTemp+"1"), filepath.Join(dir, copyTemp+"2")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	usedAgo("a", 3*time.Hour)
	usedAgo("b", 2*time.Hour)
	usedAgo("d", 90*time.Minute)
	usedAgo("e", time.Minute)
	localize("c")
	want("after all but one went idle, only down to the bound", "c", "d", "e")
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
	if hits != 1 || misses != 7 || removed != 4 || kept != 3*size {
		t.Fatalf("observed %d hits, %d misses, %d removed, %d bytes kept; want 1, 7, 4, %d", hits, misses, removed, kept, 3*size)
	}
}

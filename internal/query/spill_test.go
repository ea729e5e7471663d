//go:build unix

package query

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSpillDirectoriesOfEndedProcessesAreSwept: an engine that starts
// removes the spill directories in its CacheDir whose lock nobody holds
// (a process that died left them) and those without a lock file unchanged
// for an hour; it keeps a directory a living instance holds, however old,
// one just made, and everything that is no spill directory.
func TestSpillDirectoriesOfEndedProcessesAreSwept(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	old := time.Now().Add(-2 * time.Hour)
	age := func(p string, at time.Time) {
		t.Helper()
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	mkdir := func(name string, lock bool, at time.Time) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "duckdb_temp_storage-0.tmp"), make([]byte, 1<<20), 0o600); err != nil {
			t.Fatal(err)
		}
		if lock {
			if err := os.WriteFile(filepath.Join(p, spillLock), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		age(p, at)
		return p
	}

	// A living instance's directory, made two hours ago.
	inst, err := open(ctx, Settings{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	held := inst.spill
	if held == "" || filepath.Dir(held) != dir {
		t.Fatalf("the instance spills into %q, want a directory in %s", held, dir)
	}
	age(held, old)
	dead := mkdir(spillPrefix+"dead", true, old)
	lockless := mkdir(spillPrefix+"lockless", false, old)
	recent := mkdir(spillPrefix+"recent", false, time.Now().Add(-10*time.Minute))
	fresh := mkdir(spillPrefix+"fresh", true, time.Now())
	other := mkdir("hot-days", false, old)
	file := filepath.Join(dir, spillPrefix+"file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	age(file, old)

	e, err := New(Settings{CacheDir: dir}, Tables{})
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	for _, c := range []struct {
		path string
		kept bool
	}{{held, true}, {dead, false}, {lockless, false}, {recent, true}, {fresh, true}, {other, true}, {file, true}} {
		if _, err := os.Stat(c.path); (err == nil) != c.kept {
			t.Errorf("%s: present %v, want %v", filepath.Base(c.path), err == nil, c.kept)
		}
	}
	if err := inst.close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(held); err == nil {
		t.Errorf("the instance closed, its spill directory %s stayed", held)
	}
}

package store

import (
	"os"
	"strings"
	"testing"
)

// threads returns the number of OS threads of the process.
func threads(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Skip("no /proc/self/task:", err)
	}
	return len(ents)
}

// TestOpenFailedHoldsNoEngine: an Open refused for its declarations holds
// no DuckDB instance afterwards. An instance of 32 threads starts 31
// workers of its own, which a leaked one would keep until its idle timer.
func TestOpenFailedHoldsNoEngine(t *testing.T) {
	e := newEnv(t)
	before := threads(t)
	_, err := Open(t.Context(), Options{Pool: e.pool, Catalog: e.cat, Tables: []Table{power(), power()},
		Archive: testArchive, Query: QueryOptions{Threads: 32, CacheDir: t.TempDir()}})
	if err == nil || !strings.Contains(err.Error(), "declared twice") {
		t.Fatalf("power declared twice: %v", err)
	}
	if grew := threads(t) - before; grew >= 31 {
		t.Errorf("a failed Open left %d more threads: a DuckDB instance of 32 threads is open", grew)
	}
}

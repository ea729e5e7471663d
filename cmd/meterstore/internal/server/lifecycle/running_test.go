package lifecycle

import "testing"

// TestRunningQueries: a configured bound is kept; without one, the cores
// over query.threads, at least one.
func TestRunningQueries(t *testing.T) {
	for _, tc := range []struct{ configured, threads, cores, want int }{
		{3, 2, 2, 3},
		{0, 2, 2, 1},
		{0, 2, 16, 8},
		{0, 4, 2, 1},
		{0, 0, 8, 1}, // DuckDB's default: a thread per core
		{0, 1, 8, 8},
	} {
		if got := runningQueries(tc.configured, tc.threads, tc.cores); got != tc.want {
			t.Errorf("runningQueries(%d, %d, %d) = %d, want %d", tc.configured, tc.threads, tc.cores, got, tc.want)
		}
	}
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/workload/agebench"
	"github.com/meterstore/meterstore/internal/pgtest"
)

// TestBenchAge runs `bench age` tiny on both logs: the tables it ages past
// the catalog's tail keep a bounded log, and with --keep -1 every commit;
// each archival adds a snapshot, a manifest and a file, which expiry
// bounds in snapshots; an unknown log is refused.
func TestBenchAge(t *testing.T) {
	url := pgtest.NewDB(t)
	for _, tc := range []struct {
		keep     string
		min, max int
	}{{"0", 32, 47}, {"-1", 81, 81}} {
		path := filepath.Join(t.TempDir(), "age.json")
		out := mustRun(t, "bench", "age", "--pg-url", url, "--ages", "2,80", "--samples", "2", "--keep", tc.keep,
			"--keep-snapshots", "10", "--json", path)
		for _, want := range []string{"Head ms", "postgres, aged: N=80 / N=2 at p50: Head ", "object, expired: N=80 / N=2 at p50: Head ", "postgres, together: N=80 / N=2 at p50: Head "} {
			if !strings.Contains(out, want) {
				t.Fatalf("--keep %s: no %q in\n%s", tc.keep, want, out)
			}
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var res agebench.Result
		if err := json.Unmarshal(data, &res); err != nil {
			t.Fatal(err)
		}
		if len(res.Points) != 16 || len(res.Ratios) != 8 {
			t.Fatalf("--keep %s: %d points, %d ratios; want 16 and 8", tc.keep, len(res.Points), len(res.Ratios))
		}
		for _, p := range res.Points {
			if p.Age == 80 && p.Phase == agebench.PhaseAged && (p.Entries < tc.min || p.Entries > tc.max) {
				t.Fatalf("--keep %s: %s log of a table with 80 archivals holds %d, want %d..%d", tc.keep, p.Log, p.Entries, tc.min, tc.max)
			}
			if p.Age == 80 && p.Phase == agebench.PhaseAged && (p.Snapshots != 80 || p.Manifests != 80 || p.Files != 80) {
				t.Fatalf("--keep %s: aged by 80 archivals: %+v", tc.keep, p)
			}
			// 82 days from January 1: three months, a file each, and
			// one manifest.
			if p.Age == 80 && p.Phase == agebench.PhaseCompacted && (p.Manifests != 1 || p.Files != 3 || p.Compaction == nil || p.Compaction.ManifestsBefore != 82) {
				t.Fatalf("--keep %s: compacted: %+v, %+v", tc.keep, p, p.Compaction)
			}
			if p.Age == 80 && p.Phase == agebench.PhaseExpired && (p.Snapshots != 10 || p.Orphans == 0) {
				t.Fatalf("--keep %s: expired down to 10 snapshots: %+v", tc.keep, p)
			}
			// Measured together after the expired phase's two sample
			// archivals.
			if p.Age == 80 && p.Phase == agebench.PhaseTogether && p.Snapshots != 12 {
				t.Fatalf("--keep %s: measured together: %+v", tc.keep, p)
			}
			if p.Head <= 0 || p.Commit <= 0 || p.Load <= 0 || p.Plan <= 0 {
				t.Fatalf("--keep %s: a latency is not positive: %+v", tc.keep, p)
			}
		}
	}
	out, code := run(t, "bench", "age", "--pg-url", url, "--logs", "etcd", "--ages", "2")
	if code == 0 || !strings.Contains(out, `log "etcd"`) {
		t.Fatalf("--logs etcd: exit %d\n%s", code, out)
	}
}

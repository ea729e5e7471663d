package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/agebench"
	"github.com/meterstore/meterstore/internal/pgtest"
)

// TestBenchAge runs `bench age` tiny on both logs: the tables it ages past
// the catalog's tail keep a bounded log, and with --keep -1 every commit;
// an unknown log is refused.
func TestBenchAge(t *testing.T) {
	url := pgtest.NewDB(t)
	for _, tc := range []struct {
		keep     string
		min, max int
	}{{"0", 32, 47}, {"-1", 80, 80}} {
		path := filepath.Join(t.TempDir(), "age.json")
		out := mustRun(t, "bench", "age", "--pg-url", url, "--ages", "2,80", "--samples", "2", "--keep", tc.keep, "--json", path)
		for _, want := range []string{"Head ms", "postgres: N=80 / N=2 at p50: Head ", "object: N=80 / N=2 at p50: Head "} {
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
		if len(res.Points) != 4 || len(res.Ratios) != 2 {
			t.Fatalf("--keep %s: %d points, %d ratios; want 4 and 2", tc.keep, len(res.Points), len(res.Ratios))
		}
		for _, p := range res.Points {
			if p.Age == 80 && (p.Entries < tc.min || p.Entries > tc.max) {
				t.Fatalf("--keep %s: %s log of a table with 80 commits holds %d, want %d..%d", tc.keep, p.Log, p.Entries, tc.min, tc.max)
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

// TestBenchAgeCompact runs `bench age --compact` tiny: tables aged by
// daily archivals are compacted into one manifest and fewer files, and
// the latencies after compaction are reported.
func TestBenchAgeCompact(t *testing.T) {
	url := pgtest.NewDB(t)
	path := filepath.Join(t.TempDir(), "age.json")
	out := mustRun(t, "bench", "age", "--compact", "--pg-url", url, "--logs", "object", "--ages", "3,20", "--samples", "2", "--json", path)
	if !strings.Contains(out, "after compaction:") || !strings.Contains(out, "object: after compaction: Head ") {
		t.Fatalf("no latencies after compaction in\n%s", out)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var res agebench.Result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Points) != 2 {
		t.Fatalf("%d points, want 2", len(res.Points))
	}
	for _, p := range res.Points {
		c := p.Compaction
		if c == nil || c.ManifestsBefore != p.Age-1 || c.ManifestsAfter != 1 || c.FilesAfter != 1 || p.PlanAfter <= 0 {
			t.Fatalf("N=%d: compaction %+v, plan after %v ms; want %d manifests and files merged into one", p.Age, c, p.PlanAfter, p.Age-1)
		}
	}
}

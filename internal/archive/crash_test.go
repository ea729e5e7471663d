package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	icetable "github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/series"
)

// The variables that make this test binary an archiver to be killed.
const (
	envChild     = "MS_ARCHIVE_CHILD"
	envDB        = "MS_ARCHIVE_CHILD_DB"
	envWarehouse = "MS_ARCHIVE_CHILD_WAREHOUSE"
	envCrash     = "MS_ARCHIVE_CHILD_CRASH"
	envNth       = "MS_ARCHIVE_CHILD_NTH"
)

// crashConfig archives a day per window, two windows per cycle, in chunks
// small enough that a partition takes several.
var crashConfig = Config{SettlementLag: 24 * time.Hour, Step: 24 * time.Hour, MaxWindowsPerCycle: 2, ChunkRows: 64}

// crashNow makes days 0 to 3 due.
var crashNow = dayN(5)

// The steps the child can die at. after-files-written dies inside the
// catalog's commit check: the data files are written, the commit is not.
var crashPoints = []string{"after-detach", "mid-stream", "after-stream", "after-files-written", "after-commit", "after-drop"}

// runChild is the archiver of the crash test: it runs cycles until nothing
// is due and kills itself with SIGKILL at the nth time it reaches the
// crash point. Exit status 0 means it was never reached.
func runChild() int {
	ctx := context.Background()
	point := os.Getenv(envCrash)
	nth, _ := strconv.Atoi(os.Getenv(envNth))
	var calls atomic.Int64
	kill := func(step string) {
		if step == point && calls.Add(1) == int64(nth) {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // until the signal lands
		}
	}
	check := func(_ icetable.Identifier, base, next icetable.Metadata) error {
		if s := next.CurrentSnapshot(); s != nil && s.Summary != nil && s.Summary.Properties[cold.SummaryArchivedTo] != "" &&
			(base == nil || base.CurrentSnapshot() == nil || base.CurrentSnapshot().SnapshotID != s.SnapshotID) {
			kill("after-files-written")
		}
		return nil
	}
	e, closeAll, err := openEnv(ctx, os.Getenv(envDB), os.Getenv(envWarehouse), check)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	defer closeAll()
	a, err := New(e.hot, e.cold, e.pool, crashConfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	a.crashAt = kill
	for range 20 {
		out, err := a.Cycle(ctx, e.t, e.ct, crashNow)
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 2
		}
		if out.Status == NothingDue && len(out.Dropped) == 0 {
			break
		}
	}
	return 0
}

// TestCrashRecovery kills an archiver at every step of a window, with
// random data and writers running, lets a fresh archiver finish, and
// compares both tiers with every reading ever acknowledged.
func TestCrashRecovery(t *testing.T) {
	seeds := 5
	for _, point := range crashPoints {
		for seed := range seeds {
			t.Run(fmt.Sprintf("%s/seed%d", point, seed), func(t *testing.T) { crashRun(t, point, uint64(seed)) })
		}
	}
}

func crashRun(t *testing.T, point string, seed uint64) {
	ctx := t.Context()
	h := fnv.New64a()
	h.Write([]byte(point))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	e := newEnv(t, 7) // days 0 to 6
	o := newOracle()

	// Days 0 to 5 of a few meters, and corrections of random slots.
	meters := 2 + rng.IntN(3)
	for d := range 6 {
		for i := range meters {
			rs := make([]series.Reading, 96)
			for s := range rs {
				rs[s] = qh(i, d, s, 1, rng.Int64N(1_000_000_000))
			}
			write(t, e, o, rs)
		}
	}
	var fixes []series.Reading
	for range 10 + rng.IntN(20) {
		fixes = append(fixes, qh(rng.IntN(meters), rng.IntN(6), rng.IntN(96), 2, 0))
	}
	write(t, e, o, dedupe(fixes))

	nth := 1 + rng.IntN(3)
	if point == "after-drop" {
		nth = 1 + rng.IntN(4)
	}
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"=1", envDB+"="+e.url, envWarehouse+"="+e.dir,
		envCrash+"="+point, envNth+"="+strconv.Itoa(nth))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out

	// Writers run while the archiver works and dies: new readings above W,
	// late corrections below it, and corrections of windows in flight.
	wr := NewRouter(e.hot, e.cold)
	var failed [][]series.Reading
	var wg sync.WaitGroup
	batches := make([][]series.Reading, 4)
	for b := range batches {
		for range 5 {
			i, d, slot := rng.IntN(meters), rng.IntN(7), rng.IntN(96)
			batches[b] = append(batches[b], qh(i, d, slot, 3, int64(i*10000+d*100+slot)))
		}
		batches[b] = dedupe(batches[b])
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	wg.Go(func() {
		for _, b := range batches {
			if _, err := wr.Write(ctx, e.t, e.ct, b); err != nil {
				failed = append(failed, b) // retried below, as a caller would
				continue
			}
			o.ack(b)
		}
	})
	err := cmd.Wait()
	wg.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !exit.Sys().(syscall.WaitStatus).Signaled() || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child was not killed at %s #%d: %v\n%s", point, nth, err, out.Bytes())
	}

	// A fresh archiver completes what the dead one left. Before it runs,
	// a verification finds everything accounted for: what the dead one
	// detached is either covered by W or an archival in flight.
	a := e.archiver(t, crashConfig)
	pc, err := a.CheckPartitions(ctx, e.t, e.ct)
	if err != nil {
		t.Fatal(err)
	}
	if len(pc.Problems) > 0 || pc.Detached != pc.AwaitingDrop+pc.InFlight {
		t.Errorf("partitions after a crash at %s: %+v", point, pc)
	}
	if inFlight := slices.Contains([]string{"after-detach", "mid-stream", "after-stream", "after-files-written"}, point); inFlight != (pc.InFlight > 0) {
		t.Errorf("crash at %s: %d partitions in flight", point, pc.InFlight)
	}
	outs := cycles(t, a, e, crashNow)
	if slices.Contains([]string{"after-detach", "mid-stream", "after-stream", "after-files-written"}, point) {
		// The dead archiver detached a window it did not commit.
		if len(outs[0].Windows) == 0 || !outs[0].Windows[0].Recovered {
			t.Errorf("first cycle after the crash: %+v, want a recovered window first", outs[0])
		}
	}
	for _, b := range failed {
		if _, err := wr.Write(ctx, e.t, e.ct, b); err != nil {
			t.Fatalf("retried batch: %v", err)
		}
		o.ack(b)
	}
	cycles(t, a, e, crashNow)

	w, _, err := e.cold.Watermark(ctx, e.ct)
	if err != nil {
		t.Fatal(err)
	}
	if !w.Equal(dayN(4)) {
		t.Errorf("W = %v, want %v", w, dayN(4))
	}
	parts, err := e.hot.Partitions(ctx, e.t)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if !p.Attached {
			t.Errorf("partition %s still detached after the reader grace", p.Name)
		}
	}
	checkTiers(t, e, o.snapshot())
}

// cycles runs cycles until nothing is due or left to drop, and fails on
// an error or violation. The lease of a killed archiver lasts until the
// server notices its session ended, so contention is waited out.
func cycles(t *testing.T, a *Archiver, e *env, now time.Time) []Outcome {
	t.Helper()
	var outs []Outcome
	for range 20 {
		out, err := a.Cycle(t.Context(), e.t, e.ct, now)
		for wait := 0; out.Status == LeaseContended && err == nil && wait < 100; wait++ {
			time.Sleep(50 * time.Millisecond)
			out, err = a.Cycle(t.Context(), e.t, e.ct, now)
		}
		if err != nil {
			t.Fatalf("cycle: %v (%+v)", err, out)
		}
		if len(out.Violations) > 0 {
			t.Fatalf("violations: %q", out.Violations)
		}
		outs = append(outs, out)
		if out.Status == NothingDue && len(out.Dropped) == 0 {
			return outs
		}
	}
	t.Fatalf("archival did not settle in 20 cycles: %+v", outs[len(outs)-2:])
	return nil
}

// write writes rs to the hot tier and records them as acknowledged.
func write(t *testing.T, e *env, o *oracle, rs []series.Reading) {
	t.Helper()
	if _, err := e.hot.Write(t.Context(), e.t, rs); err != nil {
		t.Fatal(err)
	}
	o.ack(rs)
}

// dedupe keeps the first of readings with the same primary key.
func dedupe(rs []series.Reading) []series.Reading {
	seen := map[string]bool{}
	var out []series.Reading
	for _, r := range rs {
		if k := key(&r); !seen[k] {
			seen[k] = true
			out = append(out, r)
		}
	}
	return out
}

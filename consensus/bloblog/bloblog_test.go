package bloblog

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/meterstore/meterstore/blob"
	"github.com/meterstore/meterstore/consensus"
	"github.com/meterstore/meterstore/consensus/consensustest"
)

// buckets are the drivers every test runs on. S3 joins when the CI server
// is configured (see s3_test.go).
func buckets(t *testing.T) map[string]func(t *testing.T) *blob.Bucket {
	return map[string]func(t *testing.T) *blob.Bucket{
		"file": func(t *testing.T) *blob.Bucket { return openBucket(t, "file://"+t.TempDir()) },
		"mem":  func(t *testing.T) *blob.Bucket { return openBucket(t, "mem://") },
	}
}

func openBucket(t *testing.T, url string) *blob.Bucket {
	t.Helper()
	b, err := blob.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func newLog(t *testing.T, b *blob.Bucket) *Log {
	t.Helper()
	l, err := New(b, "log/")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestConformance(t *testing.T) {
	for name, open := range allBuckets(t) {
		t.Run(name, func(t *testing.T) {
			consensustest.Run(t, func(t *testing.T) consensus.Log { return newLog(t, open(t)) })
		})
	}
}

// historyOps is the length of the history each store's linearizability
// check records: 20,000 operations, fewer on the emulators, which answer
// from one process on CI's two shared cores (Azurite, a single Node.js
// thread, spends about 4.5 ms of CPU an operation: 20,000 took two
// minutes). Their histories still hold hundreds of commits and thousands of
// conflicting compare-and-sets.
var historyOps = map[string]int{"gcs": 6000, "azure": 4000}

func TestLinearizable(t *testing.T) {
	for name, open := range allBuckets(t) {
		t.Run(name, func(t *testing.T) {
			l := newLog(t, open(t))
			ops := cmp.Or(historyOps[name], 20000)
			w := consensustest.Workload{Clients: 16, Shards: []string{"a", "b", "c", "d", "e"}, Ops: ops, Seed: 11}
			start := time.Now()
			h, st, err := w.Run(t.Context(), func(int) consensus.Log { return l })
			if err != nil {
				t.Fatal(err)
			}
			if st.Committed < int64(ops)*3/200 || st.Mismatches == 0 || st.Refused == 0 {
				t.Fatalf("workload too tame: %+v", st)
			}
			res, info := consensustest.Check(h, 0)
			t.Logf("%s: 1 history of %d operations by %d clients, %+v, recorded and checked in %v: %v",
				name, len(h), w.Clients, st, time.Since(start).Round(time.Millisecond), res)
			if res != porcupine.Ok {
				consensustest.Visualize(t, info)
				t.Fatalf("history is %v", res)
			}
		})
	}
}

// TestLinearizableTeeth runs a short workload on every store with the
// log's puts made unconditional, as on a store that ignores the
// precondition: two writers of one sequence number both commit, and the
// check must say so, through porcupine or through the log finding its
// chain broken.
func TestLinearizableTeeth(t *testing.T) {
	for name, open := range allBuckets(t) {
		t.Run(name, func(t *testing.T) {
			l := newLog(t, open(t))
			l.unconditional = true
			w := consensustest.Workload{Clients: 16, Shards: []string{"a"}, Ops: 600, Seed: 12}
			h, st, err := w.Run(t.Context(), func(int) consensus.Log { return l })
			if err != nil {
				t.Logf("%s: the workload on unconditional puts failed: %v", name, err)
				return
			}
			res, _ := consensustest.Check(h, 0)
			t.Logf("%s: unconditional puts, %d operations, %+v: %v", name, len(h), st, res)
			if res != porcupine.Illegal {
				t.Fatalf("a log on unconditional puts passed the linearizability check on %s: %v", name, res)
			}
		})
	}
}

func TestShardNamesDoNotCollide(t *testing.T) {
	l := newLog(t, openBucket(t, "mem://"))
	for _, sh := range []string{"a", "a/e", "a/e/00000000000000000000", ".", "..", "a%2Fe"} {
		consensustest.Append(t, l, sh, consensus.Empty, "x"+sh)
	}
	for _, sh := range []string{"a", "a/e", "a/e/00000000000000000000", ".", "..", "a%2Fe"} {
		es, err := l.Scan(t.Context(), sh, 0, 10)
		if err != nil || len(es) != 1 || string(es[0].Data) != "x"+sh {
			t.Fatalf("Scan(%q) = %v, %v", sh, es, err)
		}
	}
}

// step is a point where a test holds an operation: it announces arrival
// and waits to be released.
type step struct{ at, release chan struct{} }

func newStep() step { return step{make(chan struct{}), make(chan struct{})} }

func (s step) wait() { s.at <- struct{}{}; <-s.release }

// TestStaleWriter is the schedule seed 000 solves with its lock: A's CaS
// builds on B's head, then stalls. B appends three entries and truncates
// past A's target key, deleting it. A resumes.
//
// Stalled before its check of lo, A must refuse without writing. Stalled
// with its put in flight (after the check), A's PutIfAbsent re-creates the
// deleted key: readers must not see it, A must not report a commit (it
// may report a mismatch or an unknown outcome), and the log must go on as
// if the put never happened. With the post-put check disabled the same
// schedule must be caught by porcupine.
func TestStaleWriter(t *testing.T) {
	for _, tc := range []struct {
		stall  string
		broken bool
	}{{"check", false}, {"put", false}, {"put", true}} {
		for _, first := range []bool{false, true} {
			t.Run(fmt.Sprintf("stall=%s/firstWrite=%v/broken=%v", tc.stall, first, tc.broken), func(t *testing.T) {
				staleWriter(t, tc.stall, first, tc.broken)
			})
		}
	}
}

func staleWriter(t *testing.T, stall string, first, broken bool) {
	b := openBucket(t, "file://"+t.TempDir())
	a, bl := newLog(t, b), newLog(t, b)
	a.skipStaleCheck = broken
	pause, after := newStep(), newStep()
	if stall == "check" {
		a.beforeCheck = func(string) { pause.wait() }
	} else {
		a.beforePut = func(string) { pause.wait() }
		a.afterPut = func(string) { after.wait() }
	}

	rec := consensustest.NewRecorder(64)
	do := func(in consensustest.Input) consensustest.Output {
		t.Helper()
		out, err := rec.Do(t.Context(), 1, bl, in)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	cas := func(exp int64, data string) consensustest.Input {
		return consensustest.Input{Shard: "s", Kind: consensustest.OpCAS, Expected: exp, Data: data}
	}
	scan := consensustest.Input{Shard: "s", Kind: consensustest.OpScan, Limit: 100}
	head := consensustest.Input{Shard: "s", Kind: consensustest.OpHead}

	n := 5 // B's entries before A starts; A builds on the last
	if first {
		n = 0 // A's first write races B's creation of the shard
	}
	for i := range n {
		do(cas(int64(i)-1, fmt.Sprint("e", i)))
	}
	aExp := int64(n) - 1
	target := a.entryKey("s", aExp+1)
	type result struct {
		out consensustest.Output
		err error
	}
	aDone := make(chan result, 1)
	go func() {
		out, err := rec.Do(context.Background(), 0, a, cas(aExp, "stale"))
		aDone <- result{out, err}
	}()
	<-pause.at
	for i := n; i < n+3; i++ {
		if out := do(cas(int64(i)-1, fmt.Sprint("e", i))); out.Result != consensus.Committed {
			t.Fatalf("B's append %d: %v", i, out.Result)
		}
	}
	cut := int64(n + 2)
	if out := do(consensustest.Input{Shard: "s", Kind: consensustest.OpTruncate, Cut: cut}); out.Removed != cut {
		t.Fatalf("truncate removed %d, want %d", out.Removed, cut)
	}
	if _, err := b.Get(t.Context(), target); err == nil {
		t.Fatalf("truncation left key %d", aExp+1)
	}
	close(pause.release)
	if stall == "put" {
		<-after.at // A's put has re-created the dead key
		if _, err := b.Get(t.Context(), target); err != nil {
			t.Fatalf("the schedule did not resurrect key %d: %v", aExp+1, err)
		}
		if out := do(scan); len(out.Entries) != 1 || out.Entries[0].SeqNo != cut {
			t.Errorf("scan while the resurrected key exists = %v, want only %d", out.Entries, cut)
		}
		if out := do(head); out.Head.SeqNo != cut {
			t.Errorf("head while the resurrected key exists = %d, want %d", out.Head.SeqNo, cut)
		}
		close(after.release)
	}
	a1 := <-aDone
	// The log goes on: A's target is not writable, the real head is.
	if out := do(cas(aExp+1, "late")); out.Result != consensus.ExpectationMismatch {
		t.Errorf("CaS on a truncated predecessor: %v", out.Result)
	}
	if out := do(cas(cut, "next")); out.Result != consensus.Committed {
		t.Errorf("CaS on the head: %v", out.Result)
	}
	if out := do(scan); len(out.Entries) != 2 || out.Entries[0].SeqNo != cut {
		t.Errorf("final scan = %v, want entries %d and %d", out.Entries, cut, cut+1)
	}
	res, _ := consensustest.Check(rec.History(), 0)
	t.Logf("A: %v, %v; porcupine: %v", a1.out.Result, a1.err, res)
	switch {
	case broken:
		if a1.err != nil || a1.out.Result != consensus.Committed || res != porcupine.Illegal {
			t.Fatalf("broken protocol not caught: A %v %v, porcupine %v", a1.out.Result, a1.err, res)
		}
	case stall == "check":
		if a1.err != nil || a1.out.Result != consensus.ExpectationMismatch || res != porcupine.Ok {
			t.Fatalf("A %v %v, porcupine %v; want ExpectationMismatch, Ok", a1.out.Result, a1.err, res)
		}
		if _, err := b.Get(t.Context(), target); err == nil {
			t.Errorf("A wrote key %d although it had seen lo past it", aExp+1)
		}
	default:
		if (a1.err == nil && a1.out.Result == consensus.Committed) || (a1.err != nil && !consensus.IsIndeterminate(a1.err)) {
			t.Fatalf("A = %v, %v; want ExpectationMismatch or an unknown outcome", a1.out.Result, a1.err)
		}
		if res != porcupine.Ok {
			t.Fatalf("porcupine: %v", res)
		}
	}
}

// TestCorruptEntry: an entry shorter than its header is corrupt, a
// permanent error that Head and Scan name, never a transient one.
func TestCorruptEntry(t *testing.T) {
	ctx := t.Context()
	b := openBucket(t, "file://"+t.TempDir())
	l := newLog(t, b)
	for i := range 2 {
		if _, err := l.CompareAndSet(ctx, "s", int64(i)-1, []byte("entry")); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Delete(ctx, l.entryKey("s", 1)); err != nil {
		t.Fatal(err)
	}
	if err := b.PutIfAbsent(ctx, l.entryKey("s", 1), []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	_, _, herr := l.Head(ctx, "s")
	_, serr := l.Scan(ctx, "s", 0, 10)
	for op, err := range map[string]error{"head": herr, "scan": serr} {
		if !errors.Is(err, consensus.ErrCorrupt) || consensus.IsRetryable(err) || errors.Is(err, consensus.ErrTransient) {
			t.Errorf("%s of a corrupt entry: %v, want ErrCorrupt and nothing retryable", op, err)
		}
	}
}

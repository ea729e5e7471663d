// Package consensustest holds the conformance and linearizability suites that
// every consensus backend must pass.
package consensustest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/meterstore/meterstore/consensus"
)

// NewLog returns a fresh, empty log for one subtest. Backends that share
// state across calls must at least keep shard names from colliding.
type NewLog func(t *testing.T) consensus.Log

// Run runs the conformance suite against the backend that newLog opens.
func Run(t *testing.T, newLog NewLog) {
	tests := []struct {
		name string
		fn   func(t *testing.T, l consensus.Log)
	}{
		{"EmptyShard", testEmptyShard},
		{"FirstWrite", testFirstWrite},
		{"Mismatch", testMismatch},
		{"HeadScanBounds", testHeadScanBounds},
		{"Truncate", testTruncate},
		{"ShardsIsolated", testShardsIsolated},
		{"LargePayload", testLargePayload},
		{"SeqNoBounds", testSeqNoBounds},
		{"MarkerInvisible", testMarkerInvisible},
		{"ConcurrentFirstWrites", testConcurrentFirstWrites},
		{"BadInput", testBadInput},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newLog(t)) })
	}
}

func ctx(t *testing.T) context.Context { return t.Context() }

// Append commits data at the head of shard and fails the test otherwise.
func Append(t *testing.T, l consensus.Log, shard string, expected int64, data string) {
	t.Helper()
	res, err := l.CompareAndSet(ctx(t), shard, expected, []byte(data))
	if err != nil {
		t.Fatalf("CompareAndSet(%q, %d): %v", shard, expected, err)
	}
	if res != consensus.Committed {
		t.Fatalf("CompareAndSet(%q, %d) = %v, want Committed", shard, expected, res)
	}
}

// fill appends n entries "e0".."e<n-1>" to an empty shard.
func fill(t *testing.T, l consensus.Log, shard string, n int) {
	t.Helper()
	for i := range n {
		Append(t, l, shard, int64(i)-1, fmt.Sprintf("e%d", i))
	}
}

func wantHead(t *testing.T, l consensus.Log, shard string, seq int64, data string) {
	t.Helper()
	e, ok, err := l.Head(ctx(t), shard)
	if err != nil {
		t.Fatalf("Head(%q): %v", shard, err)
	}
	if !ok || e.SeqNo != seq || string(e.Data) != data {
		t.Fatalf("Head(%q) = (%d, %q, %v), want (%d, %q, true)", shard, e.SeqNo, e.Data, ok, seq, data)
	}
}

func wantNoHead(t *testing.T, l consensus.Log, shard string) {
	t.Helper()
	e, ok, err := l.Head(ctx(t), shard)
	if err != nil {
		t.Fatalf("Head(%q): %v", shard, err)
	}
	if ok {
		t.Fatalf("Head(%q) = (%d, %q), want none", shard, e.SeqNo, e.Data)
	}
}

// wantScan checks that Scan returns exactly the sequence numbers seqs,
// each carrying data "e<seq>".
func wantScan(t *testing.T, l consensus.Log, shard string, from int64, limit int, seqs ...int64) {
	t.Helper()
	got, err := l.Scan(ctx(t), shard, from, limit)
	if err != nil {
		t.Fatalf("Scan(%q, %d, %d): %v", shard, from, limit, err)
	}
	var gotSeqs []int64
	for _, e := range got {
		gotSeqs = append(gotSeqs, e.SeqNo)
		if want := fmt.Sprintf("e%d", e.SeqNo); string(e.Data) != want {
			t.Errorf("Scan(%q): entry %d has data %q, want %q", shard, e.SeqNo, e.Data, want)
		}
	}
	if fmt.Sprint(gotSeqs) != fmt.Sprint(seqs) {
		t.Fatalf("Scan(%q, %d, %d) = %v, want %v", shard, from, limit, gotSeqs, seqs)
	}
}

func wantResult(t *testing.T, l consensus.Log, shard string, expected int64, want consensus.Result) {
	t.Helper()
	res, err := l.CompareAndSet(ctx(t), shard, expected, []byte("x"))
	if err != nil {
		t.Fatalf("CompareAndSet(%q, %d): %v", shard, expected, err)
	}
	if res != want {
		t.Fatalf("CompareAndSet(%q, %d) = %v, want %v", shard, expected, res, want)
	}
}

func truncate(t *testing.T, l consensus.Log, shard string, cut, want int64) {
	t.Helper()
	n, err := l.Truncate(ctx(t), shard, cut)
	if err != nil {
		t.Fatalf("Truncate(%q, %d): %v", shard, cut, err)
	}
	if n != want {
		t.Fatalf("Truncate(%q, %d) removed %d, want %d", shard, cut, n, want)
	}
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: error %v, want %v", what, err, target)
	}
}

func testEmptyShard(t *testing.T, l consensus.Log) {
	wantNoHead(t, l, "empty")
	wantScan(t, l, "empty", 0, 10)
	truncate(t, l, "empty", 0, 0)
	_, err := l.Truncate(ctx(t), "empty", 1)
	wantErr(t, "Truncate(empty, 1)", err, consensus.ErrCutAboveHead)
	wantResult(t, l, "empty", 0, consensus.ExpectationMismatch)
	wantResult(t, l, "empty", 5, consensus.ExpectationMismatch)
	wantNoHead(t, l, "empty")
}

func testFirstWrite(t *testing.T, l consensus.Log) {
	Append(t, l, "s", consensus.Empty, "e0")
	wantHead(t, l, "s", 0, "e0")
	wantScan(t, l, "s", 0, 10, 0)
	wantResult(t, l, "s", consensus.Empty, consensus.ExpectationMismatch)
	wantHead(t, l, "s", 0, "e0")
}

func testMismatch(t *testing.T, l consensus.Log) {
	fill(t, l, "s", 5) // head 4
	for _, exp := range []int64{consensus.Empty, 0, 3, 5, 6, 100} {
		wantResult(t, l, "s", exp, consensus.ExpectationMismatch)
	}
	wantHead(t, l, "s", 4, "e4")
	wantScan(t, l, "s", 0, 100, 0, 1, 2, 3, 4)
	Append(t, l, "s", 4, "e5")
	wantHead(t, l, "s", 5, "e5")
}

func testHeadScanBounds(t *testing.T, l consensus.Log) {
	fill(t, l, "s", 10)
	wantHead(t, l, "s", 9, "e9")
	wantScan(t, l, "s", 0, 3, 0, 1, 2)
	wantScan(t, l, "s", 4, 3, 4, 5, 6)
	wantScan(t, l, "s", 8, 100, 8, 9)
	wantScan(t, l, "s", 9, 1, 9)
	wantScan(t, l, "s", 10, 5)
	wantScan(t, l, "s", consensus.MaxSeqNo, 5)
	wantScan(t, l, "s", 0, 1, 0)
}

func testTruncate(t *testing.T, l consensus.Log) {
	fill(t, l, "s", 10) // 0..9
	truncate(t, l, "s", 0, 0)
	wantScan(t, l, "s", 0, 100, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	truncate(t, l, "s", 4, 4) // several at once
	wantScan(t, l, "s", 0, 100, 4, 5, 6, 7, 8, 9)
	truncate(t, l, "s", 4, 0) // repeat removes nothing
	truncate(t, l, "s", 2, 0) // below lo removes nothing
	_, err := l.Truncate(ctx(t), "s", 10)
	wantErr(t, "Truncate(s, head+1)", err, consensus.ErrCutAboveHead)
	_, err = l.Truncate(ctx(t), "s", consensus.MaxSeqNo)
	wantErr(t, "Truncate(s, MaxSeqNo)", err, consensus.ErrCutAboveHead)
	wantScan(t, l, "s", 0, 100, 4, 5, 6, 7, 8, 9)
	truncate(t, l, "s", 9, 5) // cut = head keeps the head
	wantScan(t, l, "s", 0, 100, 9)
	wantHead(t, l, "s", 9, "e9")
	truncate(t, l, "s", 9, 0)
	Append(t, l, "s", 9, "e10")
	wantScan(t, l, "s", 0, 100, 9, 10)
}

func testShardsIsolated(t *testing.T, l consensus.Log) {
	fill(t, l, "a", 3)
	fill(t, l, "b", 6)
	// A name that is a prefix of another, and one with SQL-ish bytes.
	fill(t, l, "b2", 1)
	fill(t, l, "x'; DROP TABLE t; --/ü", 2)
	truncate(t, l, "b", 5, 5)
	wantScan(t, l, "a", 0, 10, 0, 1, 2)
	wantScan(t, l, "b", 0, 10, 5)
	wantScan(t, l, "b2", 0, 10, 0)
	wantScan(t, l, "x'; DROP TABLE t; --/ü", 0, 10, 0, 1)
	wantResult(t, l, "a", 5, consensus.ExpectationMismatch)
	wantHead(t, l, "a", 2, "e2")
}

func testLargePayload(t *testing.T, l consensus.Log) {
	big := make([]byte, 1<<20)
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	big[0], big[len(big)-1] = 0, 0
	for i, data := range [][]byte{big, {}, {0, 0xff, 0}} {
		res, err := l.CompareAndSet(ctx(t), "big", int64(i)-1, data)
		if err != nil || res != consensus.Committed {
			t.Fatalf("CompareAndSet(%d bytes) = %v, %v", len(data), res, err)
		}
	}
	got, err := l.Scan(ctx(t), "big", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || !bytes.Equal(got[0].Data, big) || len(got[1].Data) != 0 || !bytes.Equal(got[2].Data, []byte{0, 0xff, 0}) {
		t.Fatalf("payloads did not round-trip: %d entries", len(got))
	}
}

func testSeqNoBounds(t *testing.T, l consensus.Log) {
	_, err := l.CompareAndSet(ctx(t), "s", consensus.MaxSeqNo, []byte("x"))
	wantErr(t, "CompareAndSet(MaxSeqNo)", err, consensus.ErrInvalid)
	_, err = l.CompareAndSet(ctx(t), "s", -2, []byte("x"))
	wantErr(t, "CompareAndSet(-2)", err, consensus.ErrInvalid)
	wantNoHead(t, l, "s")
	fill(t, l, "s", 2)
	wantResult(t, l, "s", consensus.MaxSeqNo-1, consensus.ExpectationMismatch)
	wantScan(t, l, "s", consensus.MaxSeqNo, 1)
	wantScan(t, l, "s", 0, int(^uint(0)>>1), 0, 1) // the largest limit
	_, err = l.Truncate(ctx(t), "s", consensus.MaxSeqNo)
	wantErr(t, "Truncate(MaxSeqNo)", err, consensus.ErrCutAboveHead)
	wantScan(t, l, "s", 0, 10, 0, 1)
}

// testMarkerInvisible checks what a backend's "shard exists" marker must
// never do: show up as an entry, or let a first write in after truncation.
func testMarkerInvisible(t *testing.T, l consensus.Log) {
	fill(t, l, "s", 4)
	truncate(t, l, "s", 3, 3)
	wantScan(t, l, "s", 0, 10, 3)
	wantHead(t, l, "s", 3, "e3")
	wantResult(t, l, "s", consensus.Empty, consensus.ExpectationMismatch)
	for range 3 {
		truncate(t, l, "s", 3, 0)
	}
	wantScan(t, l, "s", 0, 10, 3)
	wantResult(t, l, "s", consensus.Empty, consensus.ExpectationMismatch)
	wantHead(t, l, "s", 3, "e3")
}

func testConcurrentFirstWrites(t *testing.T, l consensus.Log) {
	const n = 16
	var (
		wg      sync.WaitGroup
		start   = make(chan struct{})
		results = make([]consensus.Result, n)
		errs    = make([]error, n)
	)
	for i := range n {
		wg.Go(func() {
			<-start
			// A retryable failure (SERIALIZABLE) wrote nothing; a caller
			// retries it, and so do we, a bounded number of times.
			for range 100 {
				results[i], errs[i] = l.CompareAndSet(ctx(t), "race", consensus.Empty, fmt.Appendf(nil, "w%d", i))
				if !consensus.IsRetryable(errs[i]) {
					break
				}
			}
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("writer %d: %v", i, errs[i])
		}
		if results[i] == consensus.Committed {
			if winner >= 0 {
				t.Fatalf("writers %d and %d both committed the first write", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatal("no writer committed")
	}
	wantHead(t, l, "race", 0, fmt.Sprintf("w%d", winner))
}

func testBadInput(t *testing.T, l consensus.Log) {
	fill(t, l, "s", 2)
	c := ctx(t)
	_, _, err := l.Head(c, "")
	wantErr(t, "Head(\"\")", err, consensus.ErrInvalid)
	_, err = l.Scan(c, "", 0, 1)
	wantErr(t, "Scan(\"\")", err, consensus.ErrInvalid)
	_, err = l.Scan(c, "s", -1, 1)
	wantErr(t, "Scan(from -1)", err, consensus.ErrInvalid)
	_, err = l.Scan(c, "s", 0, 0)
	wantErr(t, "Scan(limit 0)", err, consensus.ErrInvalid)
	_, err = l.Scan(c, "s", 0, -3)
	wantErr(t, "Scan(limit -3)", err, consensus.ErrInvalid)
	_, err = l.CompareAndSet(c, "", consensus.Empty, []byte("x"))
	wantErr(t, "CompareAndSet(\"\")", err, consensus.ErrInvalid)
	_, err = l.Truncate(c, "", 0)
	wantErr(t, "Truncate(\"\")", err, consensus.ErrInvalid)
	_, err = l.Truncate(c, "s", -1)
	wantErr(t, "Truncate(-1)", err, consensus.ErrInvalid)
	if consensus.IsRetryable(err) || consensus.IsIndeterminate(err) {
		t.Fatalf("invalid input classified as retryable or indeterminate: %v", err)
	}
	wantScan(t, l, "s", 0, 10, 0, 1)
}

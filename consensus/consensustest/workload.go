package consensustest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/anishathalye/porcupine"
	"github.com/meterstore/meterstore/consensus"
)

// Workload is a randomized mix of concurrent CaS, Head, Scan and Truncate
// operations on a few hot shards, recorded for the linearizability check.
type Workload struct {
	Clients int      // concurrent clients, each a sequential stream
	Shards  []string // the hot shards
	Ops     int      // operations in all, across clients
	Seed    uint64
}

// Stats counts what a workload run observed.
type Stats struct {
	Committed, Mismatches, Refused, Retryable, Unknown int64
}

// Run drives the workload; logFor returns the log client i uses, so clients
// may run through differently configured backends on the same storage.
func (w Workload) Run(ctx context.Context, logFor func(client int) consensus.Log) ([]porcupine.Operation, Stats, error) {
	rec := NewRecorder(w.Ops + w.Clients)
	var (
		st       Stats
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	perClient := (w.Ops + w.Clients - 1) / w.Clients
	for c := range w.Clients {
		wg.Go(func() {
			err := w.client(ctx, c, perClient, logFor(c), rec, &st)
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return rec.History(), st, firstErr
}

func (w Workload) client(ctx context.Context, c, n int, l consensus.Log, rec *Recorder, st *Stats) error {
	rng := rand.New(rand.NewPCG(w.Seed, uint64(c)))
	seen := map[string]int64{} // the last head this client saw per shard
	for i := 0; i < n; i++ {
		shard := w.Shards[rng.IntN(len(w.Shards))]
		last, ok := seen[shard]
		if !ok {
			last = consensus.Empty
		}
		in := Input{Shard: shard}
		switch p := rng.IntN(100); {
		case p < 45:
			in.Kind, in.Expected = OpCAS, last
			if p < 8 && last > consensus.Empty { // a stale writer
				in.Expected = max(consensus.Empty, last-1-int64(rng.IntN(3)))
			}
			in.Data = fmt.Sprintf("c%d-%d", c, i)
		case p < 70:
			in.Kind = OpHead
		case p < 85:
			in.Kind, in.From, in.Limit = OpScan, max(0, last-int64(rng.IntN(6))), 1+rng.IntN(4)
		default:
			in.Kind, in.Cut = OpTruncate, max(0, last-int64(rng.IntN(5)))
			if p >= 97 {
				in.Cut = last + 1 + int64(rng.IntN(2)) // often above the head
			}
		}
		out, err := rec.Do(ctx, c, l, in)
		switch {
		case consensus.IsIndeterminate(err):
			atomic.AddInt64(&st.Unknown, 1)
			continue
		case consensus.IsRetryable(err):
			atomic.AddInt64(&st.Retryable, 1)
			continue
		case err != nil:
			return fmt.Errorf("client %d: %v: %w", c, describe(in, out), err)
		}
		switch {
		case in.Kind == OpHead && out.Found:
			seen[shard] = out.Head.SeqNo
		case in.Kind == OpCAS && out.Result == consensus.Committed:
			seen[shard] = in.Expected + 1
			atomic.AddInt64(&st.Committed, 1)
		case in.Kind == OpCAS:
			atomic.AddInt64(&st.Mismatches, 1)
		case out.Refused:
			atomic.AddInt64(&st.Refused, 1)
		}
	}
	return nil
}

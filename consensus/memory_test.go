package consensus_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/meterstore/meterstore/consensus"
	"github.com/meterstore/meterstore/consensus/consensustest"
)

func TestMemoryConformance(t *testing.T) {
	consensustest.Run(t, func(*testing.T) consensus.Log { return consensus.NewMemory() })
}

func TestMemoryLinearizable(t *testing.T) {
	l := consensus.NewMemory()
	w := consensustest.Workload{Clients: 16, Shards: []string{"a", "b", "c", "d"}, Ops: 20000, Seed: 1}
	h, st, err := w.Run(t.Context(), func(int) consensus.Log { return l })
	if err != nil {
		t.Fatal(err)
	}
	if st.Committed < 1000 || st.Mismatches == 0 || st.Refused == 0 {
		t.Fatalf("workload too tame to test anything: %+v", st)
	}
	if res, _ := consensustest.Check(h, 0); res != porcupine.Ok {
		t.Fatalf("memory log: %v", res)
	}
}

// offByOne accepts a CompareAndSet whose expected is one behind the head,
// the kind of bug a lost race produces. The checker must reject it.
type offByOne struct{ *consensus.Memory }

func (o offByOne) CompareAndSet(ctx context.Context, shard string, expected int64, data []byte) (consensus.Result, error) {
	res, err := o.Memory.CompareAndSet(ctx, shard, expected, data)
	if res == consensus.ExpectationMismatch {
		if h, ok, _ := o.Head(ctx, shard); ok && h.SeqNo == expected+1 {
			return o.Memory.CompareAndSet(ctx, shard, h.SeqNo, data)
		}
	}
	return res, err
}

func TestCheckerCatchesBrokenLog(t *testing.T) {
	l := offByOne{consensus.NewMemory()}
	w := consensustest.Workload{Clients: 8, Shards: []string{"a", "b"}, Ops: 4000, Seed: 2}
	h, _, err := w.Run(t.Context(), func(int) consensus.Log { return l })
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := consensustest.Check(h, 0); res != porcupine.Illegal {
		t.Fatalf("checker accepted a log that commits stale writes: %v", res)
	}
}

func TestModelUnknownOutcome(t *testing.T) {
	cas := func(client int, exp int64, data string, out consensustest.Output, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Call: call, Return: ret, Output: out,
			Input: consensustest.Input{Shard: "s", Kind: consensustest.OpCAS, Expected: exp, Data: data}}
	}
	head := func(seq int64, data string, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: 2, Call: call, Return: ret,
			Input:  consensustest.Input{Shard: "s", Kind: consensustest.OpHead},
			Output: consensustest.Output{Found: true, Head: consensus.Entry{SeqNo: seq, Data: []byte(data)}}}
	}
	for _, tc := range []struct {
		name string
		h    []porcupine.Operation
		want porcupine.CheckResult
	}{
		{"unknown took effect", []porcupine.Operation{
			cas(0, -1, "a", consensustest.Output{Unknown: true}, 0, 100),
			head(0, "a", 10, 20),
		}, porcupine.Ok},
		{"unknown did not take effect", []porcupine.Operation{
			cas(0, -1, "a", consensustest.Output{Unknown: true}, 0, 100),
			cas(1, -1, "b", consensustest.Output{Result: consensus.Committed}, 10, 20),
			head(0, "b", 30, 40),
		}, porcupine.Ok},
		{"both committed", []porcupine.Operation{
			cas(0, -1, "a", consensustest.Output{Result: consensus.Committed}, 0, 5),
			cas(1, -1, "b", consensustest.Output{Result: consensus.Committed}, 10, 20),
		}, porcupine.Illegal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, _ := consensustest.Check(tc.h, 0); got != tc.want {
				t.Fatalf("Check = %v, want %v\n%v", got, tc.want, fmt.Sprint(tc.h))
			}
		})
	}
}

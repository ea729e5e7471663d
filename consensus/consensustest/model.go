package consensustest

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/meterstore/meterstore/consensus"
)

// OpKind names one of the four log operations.
type OpKind int

// The operations of the model.
const (
	OpHead OpKind = iota
	OpScan
	OpCAS
	OpTruncate
)

// Input is the argument of one recorded operation on one shard.
type Input struct {
	Shard    string
	Kind     OpKind
	Expected int64  // OpCAS
	Data     string // OpCAS
	From     int64  // OpScan
	Limit    int    // OpScan
	Cut      int64  // OpTruncate
}

// Output is the observed result of one recorded operation.
type Output struct {
	// Unknown marks an indeterminate failure: the operation may or may not
	// have taken effect, and nothing else about it was observed.
	Unknown bool
	Found   bool            // OpHead
	Head    consensus.Entry // OpHead
	Entries []Entry         // OpScan
	Result  consensus.Result
	Removed int64 // OpTruncate
	Refused bool  // OpTruncate answered ErrCutAboveHead
}

// Entry is a log entry with its payload as a string, comparable in the model.
type Entry struct {
	SeqNo int64
	Data  string
}

// state is one shard as the model sees it: entries lo..lo+len(data)-1.
// States are values; Step never mutates one.
type state struct {
	lo   int64
	data []string
}

func (s state) head() int64 {
	if len(s.data) == 0 {
		return consensus.Empty
	}
	return s.lo + int64(len(s.data)) - 1
}

// Model is the sequential specification of one shard's log for porcupine,
// partitioned by shard. Operations with an Unknown output may or may not
// have taken effect.
func Model() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: partitionByShard,
		Init:      func() []any { return []any{state{}} },
		Step: func(st, in, out any) []any {
			return step(st.(state), in.(Input), out.(Output))
		},
		Equal: func(a, b any) bool {
			x, y := a.(state), b.(state)
			return x.lo == y.lo && slices.Equal(x.data, y.data)
		},
		Hash: func(st any) uint64 {
			s := st.(state)
			h := fnv.New64a()
			fmt.Fprint(h, s.lo, s.data)
			return h.Sum64()
		},
		DescribeOperation: describe,
		DescribeState: func(st any) string {
			s := st.(state)
			return fmt.Sprintf("lo=%d %v", s.lo, s.data)
		},
	}
	return nm.ToModel()
}

func step(s state, in Input, out Output) []any {
	ok := []any{s}
	switch in.Kind {
	case OpHead:
		if out.Unknown {
			return ok
		}
		if !out.Found {
			return when(len(s.data) == 0, s)
		}
		return when(len(s.data) > 0 && out.Head.SeqNo == s.head() &&
			string(out.Head.Data) == s.data[len(s.data)-1], s)
	case OpScan:
		if out.Unknown {
			return ok
		}
		var want []Entry
		for i, d := range s.data {
			seq := s.lo + int64(i)
			if seq >= in.From && len(want) < in.Limit {
				want = append(want, Entry{seq, d})
			}
		}
		return when(slices.Equal(want, out.Entries), s)
	case OpCAS:
		next := s
		next.data = append(slices.Clip(s.data), in.Data)
		if len(s.data) == 0 {
			next.lo = 0
		}
		matches := in.Expected == s.head()
		switch {
		case out.Unknown && matches:
			return []any{s, next}
		case out.Unknown:
			return ok
		case out.Result == consensus.Committed:
			return when(matches, next)
		default:
			return when(!matches, s)
		}
	case OpTruncate:
		refuse := in.Cut > 0 && (len(s.data) == 0 || s.head() < in.Cut)
		next := s
		removed := int64(0)
		if !refuse && in.Cut > s.lo {
			removed = in.Cut - s.lo
			next = state{lo: in.Cut, data: s.data[removed:]}
		}
		switch {
		case out.Unknown:
			return []any{s, next}
		case out.Refused:
			return when(refuse, s)
		default:
			return when(!refuse && out.Removed == removed, next)
		}
	}
	return nil
}

func when(cond bool, s state) []any {
	if cond {
		return []any{s}
	}
	return nil
}

func partitionByShard(history []porcupine.Operation) [][]porcupine.Operation {
	byShard := map[string][]porcupine.Operation{}
	var order []string
	for _, op := range history {
		sh := op.Input.(Input).Shard
		if _, seen := byShard[sh]; !seen {
			order = append(order, sh)
		}
		byShard[sh] = append(byShard[sh], op)
	}
	out := make([][]porcupine.Operation, 0, len(order))
	for _, sh := range order {
		out = append(out, byShard[sh])
	}
	return out
}

func describe(in, out any) string {
	i, o := in.(Input), out.(Output)
	var b strings.Builder
	switch i.Kind {
	case OpHead:
		fmt.Fprintf(&b, "head(%s)", i.Shard)
	case OpScan:
		fmt.Fprintf(&b, "scan(%s, %d, %d)", i.Shard, i.From, i.Limit)
	case OpCAS:
		fmt.Fprintf(&b, "cas(%s, %d, %s)", i.Shard, i.Expected, i.Data)
	case OpTruncate:
		fmt.Fprintf(&b, "truncate(%s, %d)", i.Shard, i.Cut)
	}
	switch {
	case o.Unknown:
		b.WriteString(" -> ?")
	case i.Kind == OpHead && o.Found:
		fmt.Fprintf(&b, " -> %d:%s", o.Head.SeqNo, o.Head.Data)
	case i.Kind == OpHead:
		b.WriteString(" -> none")
	case i.Kind == OpScan:
		fmt.Fprintf(&b, " -> %v", o.Entries)
	case i.Kind == OpCAS:
		fmt.Fprintf(&b, " -> %v", o.Result)
	case o.Refused:
		b.WriteString(" -> above head")
	default:
		fmt.Fprintf(&b, " -> %d", o.Removed)
	}
	return b.String()
}

// Check reports whether history is linearizable with respect to Model. A
// timeout of zero waits for a definite answer.
func Check(history []porcupine.Operation, timeout time.Duration) (porcupine.CheckResult, porcupine.LinearizationInfo) {
	return porcupine.CheckOperationsVerbose(Model(), history, timeout)
}

// Recorder builds a porcupine history from concurrent clients. Operations
// that failed determinately are dropped (they changed nothing); those that
// failed indeterminately stay, with an Unknown output and a return time at
// the end of the history.
type Recorder struct {
	start time.Time
	ops   chan porcupine.Operation
}

// NewRecorder returns a recorder with room for capacity operations before
// Record blocks.
func NewRecorder(capacity int) *Recorder {
	return &Recorder{start: time.Now(), ops: make(chan porcupine.Operation, capacity)}
}

// Now returns the recorder's clock, for an operation's call time.
func (r *Recorder) Now() int64 { return int64(time.Since(r.start)) }

// Do runs one operation against l, records it, and returns its output.
func (r *Recorder) Do(ctx context.Context, client int, l consensus.Log, in Input) (Output, error) {
	call := r.Now()
	out, err := Apply(ctx, l, in)
	ret := r.Now()
	switch {
	case err == nil:
	case consensus.IsIndeterminate(err):
		out = Output{Unknown: true}
		ret = -1 // fixed up in History
	default:
		return out, err
	}
	r.ops <- porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
	return out, err
}

// History closes the recorder and returns the recorded operations.
func (r *Recorder) History() []porcupine.Operation {
	close(r.ops)
	var h []porcupine.Operation
	var last int64
	for op := range r.ops {
		h = append(h, op)
		last = max(last, op.Return)
	}
	for i := range h {
		if h[i].Return < 0 {
			h[i].Return = last + 1
		}
	}
	return h
}

// Apply runs in against l and returns what it observed. ErrCutAboveHead is
// an observation (Refused), not an error.
func Apply(ctx context.Context, l consensus.Log, in Input) (Output, error) {
	var out Output
	var err error
	switch in.Kind {
	case OpHead:
		var e consensus.Entry
		e, out.Found, err = l.Head(ctx, in.Shard)
		out.Head = consensus.Entry{SeqNo: e.SeqNo, Data: e.Data}
	case OpScan:
		var es []consensus.Entry
		es, err = l.Scan(ctx, in.Shard, in.From, in.Limit)
		for _, e := range es {
			out.Entries = append(out.Entries, Entry{e.SeqNo, string(e.Data)})
		}
	case OpCAS:
		out.Result, err = l.CompareAndSet(ctx, in.Shard, in.Expected, []byte(in.Data))
	case OpTruncate:
		out.Removed, err = l.Truncate(ctx, in.Shard, in.Cut)
		if errors.Is(err, consensus.ErrCutAboveHead) {
			out.Refused, err = true, nil
		}
	}
	return out, err
}

// Package consensus provides a linearizable, versioned log per shard.
//
// A shard is an opaque name. Its log holds entries with consecutive sequence
// numbers; writers extend it with CompareAndSet, which appends at expected+1
// only while expected is the head, and trim it with Truncate. Every backend
// keeps the sequence numbers of a shard one contiguous interval [lo, head],
// and every operation is linearizable.
//
// Backends live in subpackages (postgres) and in this package (Memory, the
// reference implementation). The conformance and linearizability suites in
// consensustest run against each of them.
package consensus

import (
	"context"
	"math"
)

// Empty is the expected sequence number of a shard that has no entries yet:
// the first CompareAndSet of a shard passes Empty and writes sequence number 0.
const Empty int64 = -1

// MaxSeqNo is the largest sequence number a log can hold.
const MaxSeqNo int64 = math.MaxInt64

// Entry is one version in a shard's log.
type Entry struct {
	SeqNo int64
	Data  []byte
}

// Result is the determinate outcome of a CompareAndSet.
type Result int

const (
	// Committed means the entry was appended at expected+1.
	Committed Result = iota + 1
	// ExpectationMismatch means expected was not the head; nothing was written.
	ExpectationMismatch
)

// String returns "Committed" or "ExpectationMismatch".
func (r Result) String() string {
	switch r {
	case Committed:
		return "Committed"
	case ExpectationMismatch:
		return "ExpectationMismatch"
	}
	return "Result(invalid)"
}

// Log is a set of linearizable versioned logs, one per shard.
//
// Errors are classified: IsIndeterminate reports an error after which the
// operation may or may not have taken effect; IsRetryable reports a failure
// that certainly changed nothing and may be retried as is.
type Log interface {
	// Head returns the entry with the largest sequence number; ok is false
	// when the shard has no entries.
	Head(ctx context.Context, shard string) (e Entry, ok bool, err error)

	// Scan returns up to limit entries with sequence number >= from, ascending.
	Scan(ctx context.Context, shard string, from int64, limit int) ([]Entry, error)

	// CompareAndSet appends data at expected+1 if and only if expected is the
	// current head (Empty for a shard without entries).
	CompareAndSet(ctx context.Context, shard string, expected int64, data []byte) (Result, error)

	// Truncate deletes every entry below cut and reports how many it removed.
	// It never deletes the head: a cut above the head fails with ErrCutAboveHead.
	Truncate(ctx context.Context, shard string, cut int64) (int64, error)
}

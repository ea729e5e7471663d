package consensus

import (
	"context"
	"fmt"
	"sync"
)

// Memory is the in-process reference implementation of Log. A single mutex
// makes every operation atomic, hence linearizable; it is what the other
// backends are checked against.
type Memory struct {
	mu     sync.Mutex
	shards map[string]*memShard
}

type memShard struct {
	lo      int64 // sequence number of entries[0]
	entries [][]byte
}

// NewMemory returns an empty in-memory log.
func NewMemory() *Memory { return &Memory{shards: make(map[string]*memShard)} }

// Head implements Log.
func (m *Memory) Head(ctx context.Context, shard string) (Entry, bool, error) {
	if err := ValidateShard(shard); err != nil {
		return Entry{}, false, fmt.Errorf("consensus: head: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.shards[shard]
	if s == nil || len(s.entries) == 0 {
		return Entry{}, false, nil
	}
	n := len(s.entries) - 1
	return Entry{SeqNo: s.lo + int64(n), Data: clone(s.entries[n])}, true, nil
}

// Scan implements Log.
func (m *Memory) Scan(ctx context.Context, shard string, from int64, limit int) ([]Entry, error) {
	if err := ValidateScan(shard, from, limit); err != nil {
		return nil, fmt.Errorf("consensus: scan: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.shards[shard]
	if s == nil {
		return nil, nil
	}
	var out []Entry
	for i, d := range s.entries {
		seq := s.lo + int64(i)
		if seq < from {
			continue
		}
		if len(out) == limit {
			break
		}
		out = append(out, Entry{SeqNo: seq, Data: clone(d)})
	}
	return out, nil
}

// CompareAndSet implements Log.
func (m *Memory) CompareAndSet(ctx context.Context, shard string, expected int64, data []byte) (Result, error) {
	if err := ValidateCompareAndSet(shard, expected, data); err != nil {
		return 0, fmt.Errorf("consensus: compare-and-set: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.shards[shard]
	if s == nil {
		if expected != Empty {
			return ExpectationMismatch, nil
		}
		m.shards[shard] = &memShard{entries: [][]byte{clone(data)}}
		return Committed, nil
	}
	// A shard once written never accepts Empty again, even if truncation
	// could leave it looking short: the head is never truncated.
	if head := s.lo + int64(len(s.entries)) - 1; expected != head {
		return ExpectationMismatch, nil
	}
	s.entries = append(s.entries, clone(data))
	return Committed, nil
}

// Truncate implements Log.
func (m *Memory) Truncate(ctx context.Context, shard string, cut int64) (int64, error) {
	if err := ValidateTruncate(shard, cut); err != nil {
		return 0, fmt.Errorf("consensus: truncate: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.shards[shard]
	if cut == 0 {
		return 0, nil
	}
	if s == nil || s.lo+int64(len(s.entries))-1 < cut {
		return 0, fmt.Errorf("consensus: truncate %q at %d: %w", shard, cut, ErrCutAboveHead)
	}
	if cut <= s.lo {
		return 0, nil
	}
	n := cut - s.lo
	s.entries = append([][]byte(nil), s.entries[n:]...)
	s.lo = cut
	return n, nil
}

func clone(b []byte) []byte { return append([]byte{}, b...) }

// Package bloblog implements consensus.Log on an object store whose only
// atomic primitive is PutIfAbsent, so that a deployment needs no database.
//
// # Layout
//
// A shard's entries are objects <prefix><shard>/e/<seqno>, the sequence
// number zero-padded to 20 digits so that key order is numeric order. Each
// object holds a random 16-byte write id, the write id of its predecessor,
// and the entry's data. CompareAndSet is PutIfAbsent of expected+1 after
// checking that expected is stored: in a contiguous log, "expected is
// stored and expected+1 is not" is "expected is the head".
//
// Truncations form a chain of their own, <prefix><shard>/lo/<n>: marker n
// records the cut of the n-th truncation and the write id of marker n-1, so
// truncations are totally ordered and each knows exactly how many entries
// it removed. The cut of the newest marker is lo, the start of the log;
// entries below lo are deleted after the marker is written, never before.
//
// # Stale writers cannot resurrect entries
//
// Seed 000 needs a row lock because a truncation may delete a key that a
// slow writer then creates again. Here nothing stops such a PutIfAbsent
// from succeeding, so the protocol makes the object unobservable and tells
// its writer:
//
//   - Readers ignore everything below lo, and read lo before and after a
//     listing; if lo moved, they retry. A key below lo can only be created
//     again after lo passed it, so a reader that saw lo unchanged saw no
//     such object.
//   - A writer reads lo right before its PutIfAbsent of entry k and refuses
//     if lo > k. After the put it reads lo again. A truncation writes its
//     marker before it deletes, so if no marker passed k meanwhile, no
//     rival's k was deleted and the put appended at the head. If one did,
//     the successor k+1 names its predecessor's write id: ours means the
//     put appended and was truncated since (Committed); another means the
//     put re-created a dead key (ExpectationMismatch, and the object is
//     removed). If the successor is gone too, the outcome is reported as
//     unknown.
//   - Truncation markers are pruned oldest first and only below the
//     predecessor of the newest, so the same reasoning holds for the chain:
//     a truncator checks the chain head right before its put and, if the
//     chain moved during the put, asks marker n+1 whether it was built on
//     its marker.
//
// Listings may miss objects created while they run; a reader therefore uses
// only the contiguous run of sequence numbers from lo, which is the state
// of the log at the instant the listing passed the first gap.
package bloblog

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/meterstore/meterstore/blob"
	"github.com/meterstore/meterstore/consensus"
)

const (
	idLen = 16
	// attempts bounds the retries of a read or truncation that raced with
	// a truncation; each retry means another truncation made progress.
	attempts = 32
)

// Log is a consensus.Log on a blob.Bucket.
type Log struct {
	b      *blob.Bucket
	prefix string

	// hooks let tests stop an operation at a chosen step; nil in production.
	beforeCheck func(key string)
	beforePut   func(key string)
	afterPut    func(key string)
	// listed sees how many objects each listing of a shard returned.
	listed func(prefix string, objects int)
	// skipStaleCheck disables the check after a put; only tests set it, to
	// show that the stale-writer test catches its absence.
	skipStaleCheck bool
	// unconditional writes entries and markers with Put, as on a store
	// that ignores the precondition; only tests set it, to show that the
	// linearizability check catches such a store.
	unconditional bool
}

var _ consensus.Log = (*Log)(nil)

// New returns a log that keeps its shards under prefix in b. A non-empty
// prefix must end in "/".
func New(b *blob.Bucket, prefix string) (*Log, error) {
	if prefix != "" && prefix[len(prefix)-1] != '/' {
		return nil, fmt.Errorf("%w: prefix %q must end in /", consensus.ErrInvalid, prefix)
	}
	return &Log{b: b, prefix: prefix}, nil
}

// putIfAbsent is the bucket's PutIfAbsent, or its broken variant in tests.
func (l *Log) putIfAbsent(ctx context.Context, key string, data []byte) error {
	if l.unconditional {
		return l.b.Put(ctx, key, data)
	}
	return l.b.PutIfAbsent(ctx, key, data)
}

func (l *Log) entryKey(shard string, seq int64) string {
	return fmt.Sprintf("%s/e/%020d", l.dir(shard), seq)
}

func (l *Log) markerKey(shard string, n int64) string {
	return fmt.Sprintf("%s/lo/%020d", l.dir(shard), n)
}

// dir is the key prefix of a shard. The name is escaped so that no shard's
// keys can fall under another's prefix ("a" and "a/e").
func (l *Log) dir(shard string) string {
	var b strings.Builder
	b.WriteString(l.prefix)
	for i := 0; i < len(shard); i++ {
		c := shard[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '-' || c == '_' || (c == '.' && i > 0) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

func seqOf(key string) (int64, bool) {
	if len(key) < 20 {
		return 0, false
	}
	n, err := strconv.ParseInt(key[len(key)-20:], 10, 64)
	return n, err == nil
}

// marker is one truncation in a shard's chain.
type marker struct {
	N    int64  `json:"-"`
	Cut  int64  `json:"cut"`
	ID   []byte `json:"id"`
	Prev []byte `json:"prev,omitempty"`
}

// validShard bounds shard names so that keys stay within object-store limits.
func validShard(shard string) error {
	if err := consensus.ValidateShard(shard); err != nil {
		return err
	}
	if len(shard) > 256 {
		return fmt.Errorf("%w: shard name of %d bytes; at most 256", consensus.ErrInvalid, len(shard))
	}
	return nil
}

// markers lists the shard's truncation markers, oldest first.
func (l *Log) markers(ctx context.Context, shard string) ([]marker, error) {
	objs, err := l.list(ctx, l.dir(shard)+"/lo/", "", 0)
	if err != nil {
		return nil, err
	}
	var out []marker
	for _, o := range objs {
		n, ok := seqOf(o.Key)
		if !ok {
			continue
		}
		out = append(out, marker{N: n})
	}
	return out, nil
}

// latest returns the newest truncation marker, or N = -1 if there is none.
func (l *Log) latest(ctx context.Context, shard string) (marker, error) {
	for range attempts {
		ms, err := l.markers(ctx, shard)
		if err != nil || len(ms) == 0 {
			return marker{N: -1}, err
		}
		m, err := l.readMarker(ctx, shard, ms[len(ms)-1].N)
		if errors.Is(err, blob.ErrNotFound) {
			continue // a resurrected marker was cleaned up; list again
		}
		return m, err
	}
	return marker{}, fmt.Errorf("latest truncation of %q: %w", shard, consensus.ErrTransient)
}

func (l *Log) readMarker(ctx context.Context, shard string, n int64) (marker, error) {
	data, err := l.b.Get(ctx, l.markerKey(shard, n))
	if err != nil {
		return marker{}, err
	}
	m := marker{N: n}
	if err := json.Unmarshal(data, &m); err != nil {
		return marker{}, fmt.Errorf("%w: truncation marker %d of %q: %w", consensus.ErrCorrupt, n, shard, err)
	}
	return m, nil
}

// list returns every object under prefix after startAfter, at most limit
// (0: no limit).
func (l *Log) list(ctx context.Context, prefix, startAfter string, limit int) ([]blob.Object, error) {
	var out []blob.Object
	opts := blob.ListOptions{StartAfter: startAfter}
	for {
		if limit > 0 {
			opts.Limit = min(limit-len(out), blob.DefaultListLimit)
		}
		page, err := l.b.List(ctx, prefix, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Objects...)
		if l.listed != nil {
			l.listed(prefix, len(page.Objects))
		}
		if page.Next == "" || (limit > 0 && len(out) >= limit) {
			return out, nil
		}
		opts.StartAfter = page.Next
	}
}

// run lists the entry keys from seq on, keeping only the contiguous run
// that starts at seq; see the package comment for why a gap ends it.
func (l *Log) run(ctx context.Context, shard string, seq int64, limit int) ([]int64, error) {
	start := ""
	if seq > 0 {
		start = l.entryKey(shard, seq-1)
	}
	objs, err := l.list(ctx, l.dir(shard)+"/e/", start, limit)
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, o := range objs {
		n, ok := seqOf(o.Key)
		if !ok || n != seq+int64(len(out)) {
			break
		}
		out = append(out, n)
	}
	return out, nil
}

// read runs fn between two reads of lo and retries while lo moves, so that
// fn saw no truncation and no object created again below lo.
func (l *Log) read(ctx context.Context, shard string, fn func(lo int64) error) error {
	for range attempts {
		m1, err := l.latest(ctx, shard)
		if err != nil {
			return err
		}
		// An entry that vanished between listing and reading was
		// truncated: lo moved, and the next attempt will see it.
		err = fn(m1.Cut)
		vanished := errors.Is(err, blob.ErrNotFound)
		if err != nil && !vanished {
			return err
		}
		m2, err := l.latest(ctx, shard)
		if err != nil {
			return err
		}
		if m1.N == m2.N && !vanished {
			return nil
		}
	}
	return fmt.Errorf("read %q: truncated concurrently %d times: %w", shard, attempts, consensus.ErrTransient)
}

func (l *Log) getEntry(ctx context.Context, shard string, seq int64) ([]byte, error) {
	data, err := l.b.Get(ctx, l.entryKey(shard, seq))
	if err != nil {
		return nil, err
	}
	if len(data) < 2*idLen {
		return nil, fmt.Errorf("%w: entry %d of %q is %d bytes, shorter than its header", consensus.ErrCorrupt, seq, shard, len(data))
	}
	return data[2*idLen:], nil
}

// Head implements consensus.Log.
func (l *Log) Head(ctx context.Context, shard string) (consensus.Entry, bool, error) {
	if err := validShard(shard); err != nil {
		return consensus.Entry{}, false, fmt.Errorf("consensus/bloblog: head: %w", err)
	}
	var e consensus.Entry
	var ok bool
	err := l.read(ctx, shard, func(lo int64) error {
		ok = false
		seqs, err := l.run(ctx, shard, lo, 0)
		if err != nil || len(seqs) == 0 {
			return err
		}
		e.SeqNo = seqs[len(seqs)-1]
		if e.Data, err = l.getEntry(ctx, shard, e.SeqNo); err != nil {
			return err
		}
		ok = true
		return nil
	})
	if err != nil {
		return consensus.Entry{}, false, readErr("head", shard, err)
	}
	return e, ok, nil
}

// Scan implements consensus.Log.
func (l *Log) Scan(ctx context.Context, shard string, from int64, limit int) ([]consensus.Entry, error) {
	if err := consensus.ValidateScan(shard, from, limit); err != nil {
		return nil, fmt.Errorf("consensus/bloblog: scan: %w", err)
	}
	if err := validShard(shard); err != nil {
		return nil, fmt.Errorf("consensus/bloblog: scan: %w", err)
	}
	var out []consensus.Entry
	err := l.read(ctx, shard, func(lo int64) error {
		out = nil
		seqs, err := l.run(ctx, shard, max(lo, from), limit)
		if err != nil {
			return err
		}
		for _, s := range seqs {
			data, err := l.getEntry(ctx, shard, s)
			if err != nil {
				return err
			}
			out = append(out, consensus.Entry{SeqNo: s, Data: data})
		}
		return nil
	})
	if err != nil {
		return nil, readErr("scan", shard, err)
	}
	return out, nil
}

// CompareAndSet implements consensus.Log.
func (l *Log) CompareAndSet(ctx context.Context, shard string, expected int64, data []byte) (consensus.Result, error) {
	if err := consensus.ValidateCompareAndSet(shard, expected, data); err != nil {
		return 0, fmt.Errorf("consensus/bloblog: compare-and-set: %w", err)
	}
	if err := validShard(shard); err != nil {
		return 0, fmt.Errorf("consensus/bloblog: compare-and-set: %w", err)
	}
	seq := expected + 1
	obj := make([]byte, 2*idLen, 2*idLen+len(data))
	rand.Read(obj[:idLen])
	obj = append(obj, data...)
	if expected != consensus.Empty {
		// In a contiguous log, "expected is stored and expected+1 is not"
		// is "expected is the head"; PutIfAbsent checks the second half.
		prev, err := l.b.Get(ctx, l.entryKey(shard, expected))
		if errors.Is(err, blob.ErrNotFound) {
			return consensus.ExpectationMismatch, nil
		}
		if err != nil {
			return 0, casErr(shard, consensus.ErrTransient, err)
		}
		if len(prev) < 2*idLen {
			return 0, fmt.Errorf("consensus/bloblog: entry %d of %q is too short (%d bytes)", expected, shard, len(prev))
		}
		copy(obj[idLen:2*idLen], prev[:idLen])
	}
	key := l.entryKey(shard, seq)
	if l.beforeCheck != nil {
		l.beforeCheck(key)
	}
	before, err := l.latest(ctx, shard)
	if err != nil {
		return 0, casErr(shard, consensus.ErrTransient, err)
	}
	if before.Cut > seq || (expected == consensus.Empty && before.N >= 0) {
		return consensus.ExpectationMismatch, nil // the head is past seq already
	}
	if l.beforePut != nil {
		l.beforePut(key)
	}
	err = l.putIfAbsent(ctx, key, obj)
	if errors.Is(err, blob.ErrExists) {
		return consensus.ExpectationMismatch, nil
	}
	if err != nil {
		return 0, casErr(shard, consensus.ErrIndeterminate, err)
	}
	if l.afterPut != nil {
		l.afterPut(key)
	}
	if l.skipStaleCheck {
		return consensus.Committed, nil
	}
	after, err := l.latest(ctx, shard)
	if err != nil {
		return 0, casErr(shard, consensus.ErrIndeterminate, err)
	}
	// A truncation writes its marker before it deletes, so if no marker
	// past seq appeared since before the put, no rival's seq was deleted
	// and the put appended at the head.
	if after.N == before.N || after.Cut <= seq {
		return consensus.Committed, nil
	}
	// A truncation passed seq while the put was in flight: the put either
	// appended and was then truncated, or re-created a rival's deleted
	// entry. The successor, if it still exists, names which.
	next, err := l.b.Get(ctx, l.entryKey(shard, seq+1))
	switch {
	case err == nil && len(next) >= 2*idLen && bytes.Equal(next[idLen:2*idLen], obj[:idLen]):
		return consensus.Committed, nil
	case err == nil:
		_ = l.b.Delete(ctx, key) // below lo, invisible; tidy up
		return consensus.ExpectationMismatch, nil
	}
	return 0, casErr(shard, consensus.ErrIndeterminate,
		fmt.Errorf("entry %d was truncated while its put was in flight", seq))
}

// Truncate implements consensus.Log.
//
// It is linearizable because truncations are totally ordered by their
// marker chain: the truncation that wins marker n+1 removes exactly the
// entries from the cut of marker n up to its own cut, and it checked that
// an entry at its cut existed while marker n was still the newest (any
// truncation that could have removed that entry would have had to write
// marker n+1 first).
func (l *Log) Truncate(ctx context.Context, shard string, cut int64) (int64, error) {
	if err := consensus.ValidateTruncate(shard, cut); err != nil {
		return 0, fmt.Errorf("consensus/bloblog: truncate: %w", err)
	}
	if err := validShard(shard); err != nil {
		return 0, fmt.Errorf("consensus/bloblog: truncate: %w", err)
	}
	if cut == 0 {
		return 0, nil
	}
	for range attempts {
		prev, err := l.latest(ctx, shard)
		if err != nil {
			return 0, truncErr(shard, consensus.ErrTransient, err)
		}
		if cut <= prev.Cut {
			return 0, nil // lo <= head, so cut is not above the head
		}
		_, err = l.b.Get(ctx, l.entryKey(shard, cut))
		if errors.Is(err, blob.ErrNotFound) {
			now, err := l.latest(ctx, shard)
			if err != nil {
				return 0, truncErr(shard, consensus.ErrTransient, err)
			}
			if now.N != prev.N {
				continue
			}
			return 0, fmt.Errorf("consensus/bloblog: truncate %q at %d: %w", shard, cut, consensus.ErrCutAboveHead)
		}
		if err != nil {
			return 0, truncErr(shard, consensus.ErrTransient, err)
		}
		won, err := l.putMarker(ctx, shard, prev, cut)
		if err != nil {
			return 0, err
		}
		if !won {
			continue
		}
		l.collect(ctx, shard, prev, cut)
		return cut - prev.Cut, nil
	}
	return 0, truncErr(shard, consensus.ErrTransient, errors.New("lost the truncation race too often"))
}

// putMarker tries to write marker prev.N+1 and reports whether it is a live
// link of the chain.
func (l *Log) putMarker(ctx context.Context, shard string, prev marker, cut int64) (bool, error) {
	m := marker{N: prev.N + 1, Cut: cut, ID: make([]byte, idLen), Prev: prev.ID}
	rand.Read(m.ID)
	data, _ := json.Marshal(m)
	key := l.markerKey(shard, m.N)
	if now, err := l.latest(ctx, shard); err != nil || now.N != prev.N {
		return false, err // the chain moved on: start over
	}
	err := l.putIfAbsent(ctx, key, data)
	if errors.Is(err, blob.ErrExists) {
		return false, nil
	}
	if err != nil {
		return false, truncErr(shard, consensus.ErrIndeterminate, err)
	}
	// Marker n+1 was absent right before the put. It is live unless it had
	// been pruned meanwhile, which needs newer markers; the next one names
	// the marker it was built on.
	after, err := l.latest(ctx, shard)
	if err != nil {
		return false, truncErr(shard, consensus.ErrIndeterminate, err)
	}
	if after.N == m.N {
		return true, nil
	}
	next, err := l.readMarker(ctx, shard, m.N+1)
	switch {
	case err == nil && bytes.Equal(next.Prev, m.ID):
		return true, nil
	case err == nil:
		_ = l.b.Delete(ctx, key) // a resurrected marker, below the chain's head
		return false, nil
	}
	return false, truncErr(shard, consensus.ErrIndeterminate,
		fmt.Errorf("truncation marker %d was pruned while its put was in flight", m.N))
}

// collect deletes the entries the truncation removed and prunes markers
// older than its predecessor, oldest first. Failures only leave garbage
// that readers ignore and a later truncation collects.
func (l *Log) collect(ctx context.Context, shard string, prev marker, cut int64) {
	objs, err := l.list(ctx, l.dir(shard)+"/e/", "", 0)
	if err == nil {
		for _, o := range objs {
			if n, ok := seqOf(o.Key); ok && n < cut {
				l.b.Delete(ctx, o.Key)
			}
		}
	}
	ms, err := l.markers(ctx, shard)
	if err != nil {
		return
	}
	for _, m := range ms {
		if m.N >= prev.N {
			break
		}
		if l.b.Delete(ctx, l.markerKey(shard, m.N)) != nil {
			return
		}
	}
}

func readErr(op, shard string, err error) error {
	if errors.Is(err, consensus.ErrTransient) || errors.Is(err, consensus.ErrCorrupt) {
		return fmt.Errorf("consensus/bloblog: %s %q: %w", op, shard, err)
	}
	return fmt.Errorf("consensus/bloblog: %s %q: %w: %w", op, shard, consensus.ErrTransient, err)
}

func casErr(shard string, class, err error) error {
	return fmt.Errorf("consensus/bloblog: compare-and-set %q: %w: %w", shard, class, err)
}

func truncErr(shard string, class, err error) error {
	if errors.Is(err, consensus.ErrTransient) || errors.Is(err, consensus.ErrIndeterminate) {
		return fmt.Errorf("consensus/bloblog: truncate %q: %w", shard, err)
	}
	return fmt.Errorf("consensus/bloblog: truncate %q: %w: %w", shard, class, err)
}

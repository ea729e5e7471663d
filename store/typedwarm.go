package store

import (
	"context"
	"sync"

	"github.com/meterstore/meterstore/internal/archive"
	"github.com/meterstore/meterstore/internal/cold"
)

// A typed read keeps the cold state it loaded, per table, and plans the
// next read in it without asking the catalog's log again, where that log
// is in PostgreSQL in the database the typed reads' statement runs on:
// the statement reads the log's head in its own snapshot, and a kept
// state is used only if that head is the commit it was loaded from. Then
// W and the files are those a plan made just before the statement would
// have read, and the read is one round trip; otherwise a commit landed
// (an archival, a late correction, a compaction), the state is dropped
// and the attempt is made again the way a read without one is. SQL
// statements share the kept state (sqlwarm.go).

// A headQuery returns a scalar subquery of a table's log head for the
// typed reads' statement; arg binds a parameter.
type headQuery func(arg func(any) string) string

// typedWarm is what typed reads keep between reads: per table, the cold
// state last loaded and how a statement reads the table's log head.
type typedWarm struct {
	mu     sync.Mutex
	loaded map[string]cold.Loaded
	heads  map[string]headQuery // nil where the log is elsewhere
}

// get returns the state of table name kept, if any.
func (w *typedWarm) get(name string) (cold.Loaded, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	l, ok := w.loaded[name]
	return l, ok
}

// put keeps l, a state of table name just loaded, unless a later commit's
// is kept already: a read that loaded slowly must not put back an old one.
func (w *typedWarm) put(name string, l cold.Loaded) {
	if !l.HasSeq {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if old, ok := w.loaded[name]; ok && old.Seq >= l.Seq {
		return
	}
	if w.loaded == nil {
		w.loaded = map[string]cold.Loaded{}
	}
	w.loaded[name] = l
}

// forget drops the state of table name loaded from commit seq, which a
// statement found is no longer the head.
func (w *typedWarm) forget(name string, seq int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if old, ok := w.loaded[name]; ok && old.Seq == seq {
		delete(w.loaded, name)
	}
}

// headOf returns how the typed reads' statement reads the log head of
// table ct, nil where it cannot (the log is on object storage, another
// catalog, another database), asking once per table.
func (s *Store) headOf(ctx context.Context, ct *cold.Table) headQuery {
	name := ct.Name()
	w := &s.warm
	w.mu.Lock()
	q, known := w.heads[name]
	w.mu.Unlock()
	if known {
		return q
	}
	q, ok, err := s.cold.HeadQuery(ctx, ct, s.readsDB())
	if err != nil {
		// Asked again by the next read; this one plans afresh.
		s.log.Debug("store: the log's head is not read in the typed statement", "table", name, "err", err)
		return nil
	}
	if !ok {
		q = nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.heads == nil {
		w.heads = map[string]headQuery{}
	}
	w.heads[name] = q
	return q
}

// readsDB is where the typed reads' statements run: the series reads'
// pool, if there is one.
func (s *Store) readsDB() archive.RowQuerier {
	if s.opts.ReadPool != nil {
		return s.opts.ReadPool
	}
	return s.opts.Pool
}

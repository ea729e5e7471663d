package query

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// spareIdle is how long a spare instance waits for a query before it is
// closed: an engine that is not queried holds no DuckDB.
const spareIdle = 30 * time.Second

// A spare keeps one DuckDB instance started ahead of the next query, so
// that a query does not wait the milliseconds DuckDB takes to start. Every
// instance still serves one query only: the spare is replaced, not reused.
type spare struct {
	set Settings

	mu      sync.Mutex
	inst    *instance
	timer   *time.Timer
	filling bool
	// retiring counts the instances being closed after their statement:
	// closing DuckDB takes milliseconds no answer needs to wait for.
	retiring sync.WaitGroup
	// fills counts the spares being started, which close waits for: one
	// started after it would keep a DuckDB open until its idle timer.
	fills sync.WaitGroup
	// started counts the instances started, spares and those a query
	// opened for want of one; cold counts the latter.
	started, cold atomic.Int64
}

// retire closes inst, whose statement has ended, in the background.
func (s *spare) retire(inst *instance) {
	s.retiring.Add(1)
	go func() {
		defer s.retiring.Done()
		inst.close()
	}()
}

// detach returns the spare instance, nil if there is none, and leaves
// none: its idle timer is stopped.
func (s *spare) detach() *instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	inst := s.inst
	s.inst = nil
	if s.timer != nil {
		s.timer.Stop()
	}
	return inst
}

// close closes the spare instance, if any, and waits for the instances
// being retired: afterwards no DuckDB of the engine is open and no spill
// directory is left. Later queries still work; they start instances anew.
func (s *spare) close() {
	s.fills.Wait()
	inst := s.detach()
	if inst != nil {
		inst.close()
	}
	s.retiring.Wait()
}

// take returns the spare instance, or a new one if there is none, made to
// spill into a directory of its own, and starts the next spare.
func (s *spare) take(ctx context.Context) (*instance, error) {
	inst := s.detach()
	s.fills.Add(1)
	go func() {
		defer s.fills.Done()
		s.fill()
	}()
	if inst == nil {
		s.started.Add(1)
		s.cold.Add(1)
		return open(ctx, s.set)
	}
	if err := inst.spillInto(ctx, s.set.CacheDir); err != nil {
		inst.close()
		return nil, err
	}
	return inst, nil
}

// fill starts a spare instance unless there is one or one is starting.
// A failure is left to the query that would take it: it opens its own.
func (s *spare) fill() {
	s.mu.Lock()
	if s.inst != nil || s.filling {
		s.mu.Unlock()
		return
	}
	s.filling = true
	s.mu.Unlock()
	s.started.Add(1)
	inst, err := start(context.Background(), s.set)
	s.mu.Lock()
	s.filling = false
	s.mu.Unlock()
	if err == nil {
		s.put(inst)
	}
}

// put keeps inst, started and not spilling, as the spare, or closes it if
// there is one.
func (s *spare) put(inst *instance) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inst != nil {
		s.retire(inst)
		return
	}
	s.inst = inst
	s.timer = time.AfterFunc(spareIdle, func() {
		s.mu.Lock()
		idle := s.inst == inst
		if idle {
			s.inst = nil
		}
		s.mu.Unlock()
		if idle {
			inst.close()
		}
	})
}

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
// that a query does not wait the milliseconds DuckDB takes to start. The
// spare is replaced once taken; keep.go keeps the ducks of statements
// that ran for the next statement locked down alike.
type spare struct {
	set Settings

	mu      sync.Mutex
	inst    *instance
	timer   *time.Timer
	filling bool
	// filled is closed when the spare being started (filling) is kept
	// or has failed to start; awaited says a statement waits for it.
	filled  chan struct{}
	awaited bool
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

// await returns the spare instance as detach does, first waiting for the
// one being started, if any: a statement that follows the last within
// the time DuckDB takes to start found none, and starting another beside
// it, on the same cores, took longer than waiting for it (measured: on
// two loaded cores every other statement of a series opened its own).
// One statement waits for a spare: the others at the same time open
// their own, as before, for it serves one of them only (with every one
// waiting, two clients of bench query got fewer answers a second in each
// of three runs).
func (s *spare) await(ctx context.Context) *instance {
	s.mu.Lock()
	filled := s.filled
	wait := s.inst == nil && s.filling && !s.awaited
	if wait {
		s.awaited = true
	}
	s.mu.Unlock()
	if wait {
		select {
		case <-filled:
		case <-ctx.Done():
		}
	}
	return s.detach()
}

// take returns the spare instance, or a new one if there is none, and
// starts the next spare. Its lockdown has it spill into a directory of
// its own.
func (s *spare) take(ctx context.Context) (*instance, error) {
	inst := s.await(ctx)
	if filled := s.claim(); filled != nil {
		s.fills.Add(1)
		go func() {
			defer s.fills.Done()
			s.fill(filled)
		}()
	}
	if inst == nil {
		s.started.Add(1)
		s.cold.Add(1)
		return start(ctx, s.set)
	}
	return inst, nil
}

// claim returns the channel a new spare's fill closes, nil if there is a
// spare or one is starting. It marks one starting before the fill runs,
// so that the next statement waits for it however soon it comes.
func (s *spare) claim() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inst != nil || s.filling {
		return nil
	}
	s.filling = true
	s.filled = make(chan struct{})
	s.awaited = false
	return s.filled
}

// fill starts a spare instance, which claim has marked starting, and
// closes filled once it is kept or has failed. A failure is left to the
// query that would take it: it opens its own.
func (s *spare) fill(filled chan struct{}) {
	defer close(filled)
	s.started.Add(1)
	inst, err := start(context.Background(), s.set)
	if err == nil {
		s.put(inst)
	}
	s.mu.Lock()
	s.filling = false
	s.mu.Unlock()
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

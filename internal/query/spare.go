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

// A spare keeps DuckDB instances started ahead of the next queries, one
// for each number of threads a statement has asked for, so that a query
// does not wait the milliseconds DuckDB takes to start. A spare is
// replaced once taken; keep.go keeps the ducks of statements that ran for
// the next statement locked down alike.
//
// A statement that scans cold files runs on the engine's threads, one
// that reads the hot tier alone on one (see Statement.stream). An
// instance keeps the threads it started with: DuckDB purges the whole
// process's allocator whenever an instance's threads change, 20 to 50 ms
// in the lockdown of a statement across both tiers after large ones
// (measured), where taking an instance started on them costs nothing.
type spare struct {
	set Settings

	mu    sync.Mutex
	slots map[int]*slot // by threads, 0 for DuckDB's default
	// retiring counts the instances being closed after their statement:
	// closing DuckDB takes milliseconds no answer needs to wait for.
	retiring sync.WaitGroup
	// fills counts the spares being started, which close waits for: one
	// started after it would keep a DuckDB open until its idle timer.
	fills sync.WaitGroup
	// started counts the instances started, spares and those a query
	// opened for want of one; cold counts the latter; rethreaded counts
	// the lockdowns that changed an instance's threads, which a statement
	// that took its instance before it knew it scans files needs.
	started, cold, rethreaded atomic.Int64
}

// A slot is the spare of one number of threads.
type slot struct {
	inst    *instance
	timer   *time.Timer
	filling bool
	// filled is closed when the spare being started (filling) is kept
	// or has failed to start; awaited says a statement waits for it.
	filled  chan struct{}
	awaited bool
}

// threads returns the threads of the instances of a statement that scans
// cold files (wide) or reads the hot tier alone.
func (s *spare) threads(wide bool) int {
	if wide {
		return s.set.Threads
	}
	return 1
}

// slot returns the slot of threads, made if need be; s.mu is held.
func (s *spare) slot(threads int) *slot {
	if s.slots == nil {
		s.slots = map[int]*slot{}
	}
	sl := s.slots[threads]
	if sl == nil {
		sl = &slot{}
		s.slots[threads] = sl
	}
	return sl
}

// retire closes inst, whose statement has ended, in the background.
func (s *spare) retire(inst *instance) {
	s.retiring.Add(1)
	go func() {
		defer s.retiring.Done()
		inst.close()
	}()
}

// detach returns the spare instance of threads, nil if there is none,
// and leaves none: its idle timer is stopped.
func (s *spare) detach(threads int) *instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := s.slot(threads)
	inst := sl.inst
	sl.inst = nil
	if sl.timer != nil {
		sl.timer.Stop()
	}
	return inst
}

// close closes the spare instances, if any, and waits for the instances
// being retired: afterwards no DuckDB of the engine is open and no spill
// directory is left. Later queries still work; they start instances anew.
func (s *spare) close() {
	s.fills.Wait()
	s.mu.Lock()
	var threads []int
	for n := range s.slots {
		threads = append(threads, n)
	}
	s.mu.Unlock()
	for _, n := range threads {
		if inst := s.detach(n); inst != nil {
			inst.close()
		}
	}
	s.retiring.Wait()
}

// await returns the spare instance of threads as detach does, first
// waiting for the one being started, if any: a statement that follows the
// last within the time DuckDB takes to start found none, and starting
// another beside it, on the same cores, took longer than waiting for it
// (measured: on two loaded cores every other statement of a series opened
// its own). One statement waits for a spare: the others at the same time
// open their own, as before, for it serves one of them only (with every
// one waiting, two clients of bench query got fewer answers a second in
// each of three runs).
func (s *spare) await(ctx context.Context, threads int) *instance {
	s.mu.Lock()
	sl := s.slot(threads)
	filled := sl.filled
	wait := sl.inst == nil && sl.filling && !sl.awaited
	if wait {
		sl.awaited = true
	}
	s.mu.Unlock()
	if wait {
		select {
		case <-filled:
		case <-ctx.Done():
		}
	}
	return s.detach(threads)
}

// take returns the spare instance for a statement that scans cold files
// (wide) or not, or a new one if there is none, and starts the next spare
// of its threads. Its lockdown has it spill into a directory of its own.
func (s *spare) take(ctx context.Context, wide bool) (*instance, error) {
	threads := s.threads(wide)
	inst := s.await(ctx, threads)
	if filled := s.claim(threads); filled != nil {
		s.fills.Add(1)
		go func() {
			defer s.fills.Done()
			s.fill(threads, filled)
		}()
	}
	if inst == nil {
		s.started.Add(1)
		s.cold.Add(1)
		return start(ctx, s.set, threads)
	}
	return inst, nil
}

// claim returns the channel a new spare's fill closes, nil if there is a
// spare of threads or one is starting. It marks one starting before the
// fill runs, so that the next statement waits for it however soon it
// comes.
func (s *spare) claim(threads int) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := s.slot(threads)
	if sl.inst != nil || sl.filling {
		return nil
	}
	sl.filling = true
	sl.filled = make(chan struct{})
	sl.awaited = false
	return sl.filled
}

// fill starts a spare instance of threads, which claim has marked
// starting, and closes filled once it is kept or has failed. A failure is
// left to the query that would take it: it opens its own.
func (s *spare) fill(threads int, filled chan struct{}) {
	defer close(filled)
	s.started.Add(1)
	inst, err := start(context.Background(), s.set, threads)
	if err == nil {
		s.put(inst)
	}
	s.mu.Lock()
	s.slot(threads).filling = false
	s.mu.Unlock()
}

// put keeps inst, started and not spilling, as the spare of its threads,
// or closes it if there is one.
func (s *spare) put(inst *instance) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := s.slot(inst.threads)
	if sl.inst != nil {
		s.retire(inst)
		return
	}
	sl.inst = inst
	sl.timer = time.AfterFunc(spareIdle, func() {
		s.mu.Lock()
		idle := sl.inst == inst
		if idle {
			sl.inst = nil
		}
		s.mu.Unlock()
		if idle {
			inst.close()
		}
	})
}

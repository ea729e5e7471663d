package hot

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A Snapshot is one consistent state of the hot tier for a query, all the
// tables it reads (see Snapshot.Read): the transaction that takes it
// exports it (pg_export_snapshot) and stays open until Close, and every
// other connection that reads for it imports it first (SET TRANSACTION
// SNAPSHOT), so that partitions may be read in parallel and still agree
// with each other and with the partitions listed.
//
// A snapshot holds one connection of the pool from the start; others join
// as its cursors need them and the pool has them, and are never waited
// for. At most half the pool's connections hold snapshots at once: a
// query that holds one while it waits for the pool, to plan the cold tier
// or to read another table's watermark, always finds a connection that
// nothing holds so.
type Snapshot struct {
	h    *Tier
	snap string
	max  int

	ctx    context.Context // ends at Close: acquisitions
	cancel context.CancelFunc
	grow   sync.WaitGroup
	token  bool // holds one of the tier's snapshot tokens

	mu      sync.Mutex
	conns   []*readConn // in the snapshot; the first took it
	pending int         // connections being acquired
	closed  bool
	next    int // cursor names
	// vacuum are the relations to vacuum once the snapshot has ended
	// (Tier.vacuumSoon).
	vacuum []string
}

// vacuumAfter has rel vacuumed once the snapshot has ended.
func (s *Snapshot) vacuumAfter(rel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.vacuum, rel) {
		s.vacuum = append(s.vacuum, rel)
	}
}

// A readConn is a connection of a Snapshot and the cursors declared on it,
// which only it can fetch.
type readConn struct {
	mu       sync.Mutex // held while a statement runs
	c        *pgxpool.Conn
	open     int  // cursors not at their end
	released bool // by Close: no statement may run
}

// OpenSnapshot takes a snapshot of the hot tier, to be read with up to
// conns connections at once. It waits while half the pool's connections
// hold snapshots.
func (h *Tier) OpenSnapshot(ctx context.Context, conns int) (*Snapshot, error) {
	s, _, err := h.openSnapshot(ctx, conns)
	return s, err
}

// openSnapshot takes a snapshot as OpenSnapshot does and runs the
// statements then in it, in the same round trip, and returns their
// results.
func (h *Tier) openSnapshot(ctx context.Context, conns int, then ...string) (*Snapshot, []*pgconn.Result, error) {
	const op = "read"
	select {
	case h.snapshots <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, classify(op, "", context.Cause(ctx))
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &Snapshot{h: h, max: max(1, min(conns, cap(h.snapshots))), ctx: rctx, cancel: cancel, token: true}
	holder, err := h.pool.Acquire(ctx)
	if err != nil {
		s.Close()
		return nil, nil, classify(op, "", err)
	}
	s.conns = []*readConn{{c: holder}}
	sql := `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY;
SELECT pg_catalog.pg_export_snapshot()`
	for _, t := range then {
		sql += ";\n" + t
	}
	want := 2 + len(then)
	res, err := holder.Conn().PgConn().Exec(ctx, sql).ReadAll()
	if err == nil && (len(res) != want || len(res[1].Rows) != 1) {
		err = errors.New("no snapshot exported")
	}
	if err != nil {
		s.Close()
		return nil, nil, classify(op, "", err)
	}
	s.snap = string(res[1].Rows[0][0])
	return s, res[2:], nil
}

// assign returns the connection a new cursor is declared on, the least
// busy one, and its name; one more connection is asked for if every one
// has a cursor. It is false once the snapshot is closed.
func (s *Snapshot) assign() (*readConn, string, bool) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, "", false
	}
	rc := s.conns[0]
	for _, c := range s.conns[1:] {
		if c.open < rc.open {
			rc = c
		}
	}
	rc.open++
	s.next++
	name := "meterstore_read_" + strconv.Itoa(s.next)
	busy := rc.open > 1
	s.mu.Unlock()
	if busy {
		s.acquire()
	}
	return rc, name, true
}

// done tells the snapshot that a cursor of rc has ended.
func (s *Snapshot) done(rc *readConn) {
	s.mu.Lock()
	rc.open--
	s.mu.Unlock()
}

// acquire has one more connection of the pool join the snapshot, unless
// it has its most or is closed. It does not wait: the connection joins
// when the pool has one, or never; the channel it returns, nil if none
// is asked for, is closed then.
func (s *Snapshot) acquire() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.conns)+s.pending >= s.max {
		return nil
	}
	s.pending++
	s.grow.Add(1)
	joined := make(chan struct{})
	go func() {
		defer s.grow.Done()
		defer close(joined)
		c, err := s.h.pool.Acquire(s.ctx)
		if err == nil {
			_, err = c.Exec(s.ctx, `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET TRANSACTION SNAPSHOT `+lit(s.snap))
			if err != nil {
				c.Release()
			}
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.pending--
		switch {
		case err != nil:
		case s.closed:
			c.Release()
		default:
			s.conns = append(s.conns, &readConn{c: c})
		}
	}()
	return joined
}

// Close ends the snapshot and every read in it: it ends the transactions
// and gives the connections back to the pool. Its cursors must not be
// used any more.
func (s *Snapshot) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.grow.Wait()
	ctx := context.WithoutCancel(s.ctx)
	var errs []error
	for _, rc := range s.conns {
		rc.mu.Lock()
		// A read-only transaction: rolling back ends it as committing
		// would, and closes its cursors. A connection that fails to is
		// destroyed on release.
		if !rc.c.Conn().IsClosed() {
			if _, err := rc.c.Exec(ctx, `ROLLBACK`); err != nil {
				errs = append(errs, err)
			}
		}
		rc.c.Release()
		rc.released = true
		rc.mu.Unlock()
	}
	if s.token {
		<-s.h.snapshots
	}
	s.mu.Lock()
	vacuum := s.vacuum
	s.mu.Unlock()
	for _, rel := range vacuum {
		s.h.vacuumSoon(rel)
	}
	if err := errors.Join(errs...); err != nil {
		return classify("read", "", err)
	}
	return nil
}

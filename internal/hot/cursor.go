package hot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/meterstore/meterstore/series"
)

// A Cursor reads the rows of one part of a relation of a Read, a batch at
// a time, column by column: after Next, Null, Int64, Uint64 and Bytes
// return the current row's value of a column by its position among the
// columns asked for, as its Kind says. Values are decoded from the wire
// without a Go value per row; Bytes is valid until the next call of Next.
// While its consumer decodes a batch, the next ones are fetched, up to
// aheadBatches and fewer for wide rows (aheadDepth): PostgreSQL and the
// consumer work at once, and memory holds a few batches. A Cursor is for
// one goroutine at a time.
type Cursor struct {
	r     *Read
	conn  *readConn
	name  string
	query string // the SELECT to bind the portal to before its first batch
	kinds []Kind
	// keys, if any, are the positions in a fetched row of the merge
	// key's columns, which come in primary key order: of each run of rows
	// with the same key only the last, the newest version, is handed
	// over. hidden is how many of them follow the columns asked for. A
	// batch's last row is tentative until the next row's key is known;
	// key holds its key. They are the fetching side's.
	keys      []int
	hidden    int
	key       [][]byte
	tentative bool

	// steps, if set, has the columns that cross as a step and are
	// handed over as the time it starts (see timeStepper).
	steps []stepTime

	cur *fetched // the batch being read
	row int      // rows of cur read
	// ahead hands over the batches fetched ahead, free takes back those
	// read; stop ends the fetching early, which wg waits for.
	ahead chan *fetched
	free  chan *fetched
	stop  chan struct{}
	wg    sync.WaitGroup

	// The current row's values.
	ints  []int64
	uints []uint64
	vals  [][]byte
	err   error
	done  bool
}

// A stepTime turns a step, as it crosses, into the time (µs) it starts:
// (step + add) × micros; a zero micros leaves the column as it is.
type stepTime struct{ micros, add int64 }

// A fetched batch is the rows of one execution of the portal: their
// values one after the other in arena, each as an offset and a length
// (-1: NULL) in spans. Of its rows the first rows are handed over; a
// tentative one may follow them.
type fetched struct {
	arena []byte
	spans []int32
	rows  int
	last  bool  // no batch follows
	err   error // that ended the fetching
}

// aheadBatches is how many batches a cursor fetches ahead of its
// consumer at most. With one, the cursor a statement opens on its next
// partition (a second connection) fetched a batch and waited, so that one
// PostgreSQL backend worked at a time: every meter's total over seven
// hot days (795,000 rows, one DuckDB thread) took 282 to 305 ms, with six
// 255 to 264 (measured, bench query (e)); sixteen gave nothing more.
const aheadBatches = 6

// aheadBytes bounds what a cursor of wide rows fetches ahead: by its
// first batch's size, fewer batches (see aheadDepth).
const aheadBytes = 2 << 20

// aheadDepth returns how many batches a cursor whose first batch's values
// took first bytes fetches ahead: aheadBatches, fewer where that would
// hold more than aheadBytes, at least one.
func aheadDepth(first int) int {
	if first <= 0 {
		return aheadBatches
	}
	return max(1, min(aheadBatches, aheadBytes/first))
}

// start reads the first batch, then has the next ones fetched ahead of
// the consumer until the last.
func (c *Cursor) start(ctx context.Context) error {
	b := c.batch()
	c.cur = b
	if err := c.fetch(ctx, b, nil); err != nil {
		return c.fail(err)
	}
	if b.last {
		return nil
	}
	c.ahead, c.free, c.stop = make(chan *fetched, aheadBatches), make(chan *fetched, aheadBatches+1), make(chan struct{})
	for range aheadDepth(len(b.arena)) {
		c.free <- c.batch()
	}
	c.wg.Add(1)
	go c.fetchAhead(ctx, b)
	return nil
}

// batch returns an empty batch: the arena and spans of one an ended
// cursor filled, if there is one, and nothing else of it.
func (c *Cursor) batch() *fetched {
	if b, ok := c.r.s.h.batches.Get().(*fetched); ok {
		return &fetched{arena: b.arena[:0], spans: b.spans[:0]}
	}
	return new(fetched)
}

// fetchAhead fetches the batches after prev until the last, an error, or
// the end of the cursor or of its snapshot.
func (c *Cursor) fetchAhead(ctx context.Context, prev *fetched) {
	defer c.wg.Done()
	// A consumer waiting for a batch that will not come learns it so.
	defer close(c.ahead)
	for {
		var b *fetched
		select {
		case b = <-c.free:
		case <-c.stop:
			return
		case <-c.r.s.ctx.Done():
			return
		}
		b.err = c.fetch(ctx, b, prev)
		select {
		case c.ahead <- b:
		case <-c.stop:
			return
		case <-c.r.s.ctx.Done():
			return
		}
		if b.err != nil || b.last {
			return
		}
		prev = b
	}
}

// fetch reads the next batch into b, after prev, whose tentative row it
// starts with, holding the cursor's connection only while the batch
// crosses.
func (c *Cursor) fetch(ctx context.Context, b *fetched, prev *fetched) error {
	start := time.Now()
	c.conn.mu.Lock()
	if c.conn.released {
		c.conn.mu.Unlock()
		return errors.New("the snapshot is closed")
	}
	c.carry(b, prev)
	got := 0
	res, err := execPortal(ctx, c.conn.c.Conn().PgConn(), c.name, c.query, c.r.batch, c.check, func(vals [][]byte) {
		got++
		if c.keys != nil {
			if c.tentative && c.sameKey(vals) {
				// A newer version of the same key replaces it.
				c.drop(b)
			}
			c.keep(vals)
		}
		c.add(b, vals)
	})
	c.query = ""
	c.conn.mu.Unlock()
	if err == nil {
		err = res.err
	}
	if err != nil {
		return err
	}
	r := c.r
	r.first.CompareAndSwap(0, start.UnixNano())
	for now := time.Now().UnixNano(); ; {
		l := r.last.Load()
		if l >= now || r.last.CompareAndSwap(l, now) {
			break
		}
	}
	r.rows.Add(int64(got))
	r.bytes.Add(int64(len(b.arena)))
	if b.last = !res.more; b.last {
		c.tentative = false
	}
	if c.tentative {
		b.rows--
	}
	return nil
}

// carry starts b with the tentative row of prev, if any: only its
// successor tells whether it is the newest version.
func (c *Cursor) carry(b, prev *fetched) {
	b.arena, b.spans, b.rows, b.err = b.arena[:0], b.spans[:0], 0, nil
	if !c.tentative || prev == nil {
		return
	}
	n := len(c.kinds)
	spans := prev.spans[2*n*prev.rows : 2*n*(prev.rows+1)]
	base := spans[0]
	b.arena = append(b.arena, prev.arena[base:]...)
	b.spans = append(b.spans, spans...)
	for i := 0; i < len(b.spans); i += 2 {
		b.spans[i] -= base
	}
	b.rows = 1
}

// drop removes b's last row.
func (c *Cursor) drop(b *fetched) {
	n := len(c.kinds)
	b.rows--
	b.arena = b.arena[:b.spans[2*n*b.rows]]
	b.spans = b.spans[:2*n*b.rows]
}

// keep copies the key of a fetched row as the tentative row's.
func (c *Cursor) keep(vals [][]byte) {
	if c.key == nil {
		c.key = make([][]byte, len(c.keys))
	}
	for i, k := range c.keys {
		c.key[i] = append(c.key[i][:0], vals[k]...)
		if vals[k] == nil {
			c.key[i] = nil
		}
	}
	c.tentative = true
}

// sameKey reports whether a fetched row has the tentative row's key.
func (c *Cursor) sameKey(vals [][]byte) bool {
	for i, k := range c.keys {
		if (c.key[i] == nil) != (vals[k] == nil) || !bytes.Equal(c.key[i], vals[k]) {
			return false
		}
	}
	return true
}

// add appends a row's values, those asked for, to b.
func (c *Cursor) add(b *fetched, vals [][]byte) {
	for _, v := range vals[:len(c.kinds)] {
		if v == nil {
			b.spans = append(b.spans, int32(len(b.arena)), -1)
			continue
		}
		b.spans = append(b.spans, int32(len(b.arena)), int32(len(v)))
		b.arena = append(b.arena, v...)
	}
	b.rows++
}

// check makes sure the batch's columns have the types and the format the
// kinds decode.
func (c *Cursor) check(fds []pgproto3.FieldDescription) error {
	if len(fds) != len(c.kinds)+c.hidden {
		return fmt.Errorf("%d columns, want %d", len(fds), len(c.kinds)+c.hidden)
	}
	for i, fd := range fds[:len(c.kinds)] {
		want := kindOID[c.kinds[i]]
		if c.stepped(i) {
			want = kindOID[KindInt32]
		}
		if fd.DataTypeOID != want || fd.Format != 1 {
			return &series.Error{Kind: series.InvariantViolation, Op: "read", Table: c.r.t.Name,
				Err: fmt.Errorf("column %s has type %d in format %d, want %d in binary", fd.Name, fd.DataTypeOID, fd.Format, want)}
		}
	}
	return nil
}

// Next reads the next row; false at the end or on an error (see Err).
func (c *Cursor) Next(ctx context.Context) bool {
	if c.done {
		return false
	}
	for c.row == c.cur.rows {
		if c.cur.last {
			c.finish()
			return false
		}
		// Given back: the fetching may fill it again, and an end now
		// must not pool it twice.
		c.free <- c.cur
		c.cur = nil
		select {
		case b, ok := <-c.ahead:
			if !ok {
				c.fail(errors.New("the snapshot is closed"))
				return false
			}
			c.cur, c.row = b, 0
			if b.err != nil {
				c.fail(b.err)
				return false
			}
		case <-ctx.Done():
			c.fail(context.Cause(ctx))
			return false
		}
	}
	spans := c.cur.spans[2*len(c.kinds)*c.row:]
	c.row++
	for i, k := range c.kinds {
		off, n := spans[2*i], spans[2*i+1]
		if n < 0 {
			c.vals[i] = nil
			continue
		}
		b := c.cur.arena[off : off+n : off+n]
		c.vals[i] = b
		var err error
		switch k {
		case KindText:
		case KindUint64:
			c.uints[i], err = decodeUint(b)
		default:
			if c.stepped(i) {
				var step int64
				step, err = decodeInt(KindInt32, b)
				c.ints[i] = (step + c.steps[i].add) * c.steps[i].micros
				break
			}
			c.ints[i], err = decodeInt(k, b)
		}
		if err != nil {
			c.fail(fmt.Errorf("column %d: %w", i, err))
			return false
		}
	}
	return true
}

// stepped reports whether column i crosses as a step.
func (c *Cursor) stepped(i int) bool { return c.steps != nil && c.steps[i].micros != 0 }

// fail ends the cursor with err.
func (c *Cursor) fail(err error) error {
	var se *series.Error
	if errors.As(err, &se) {
		c.err = err
	} else if errors.Is(err, errWire) {
		c.err = &series.Error{Kind: series.InvariantViolation, Op: "read", Table: c.r.t.Name, Err: err}
	} else {
		c.err = classify("read", c.r.t.Name, err)
	}
	c.finish()
	return c.err
}

// finish ends the cursor: its connection has one cursor less to serve.
// The server's cursor lives until the read's transaction ends.
func (c *Cursor) finish() {
	if c.done {
		return
	}
	c.done = true
	pool := &c.r.s.h.batches
	if c.stop != nil {
		close(c.stop)
		c.wg.Wait()
		// The fetching has ended and closed ahead; what it holds and
		// what the consumer gave back go back to the pool.
		for b := range c.ahead {
			pool.Put(b)
		}
		for len(c.free) > 0 {
			pool.Put(<-c.free)
		}
	}
	if c.cur != nil {
		pool.Put(c.cur)
	}
	c.cur = nil
	if c.conn != nil {
		c.r.s.done(c.conn)
	}
}

// Null reports whether column i of the row is NULL.
func (c *Cursor) Null(i int) bool { return c.vals[i] == nil }

// Int64 returns column i of the row, of any kind but KindText and
// KindUint64.
func (c *Cursor) Int64(i int) int64 { return c.ints[i] }

// Uint64 returns column i of the row, of KindUint64.
func (c *Cursor) Uint64(i int) uint64 { return c.uints[i] }

// Bytes returns column i of the row, of KindText, valid until Next.
func (c *Cursor) Bytes(i int) []byte { return c.vals[i] }

// Err returns the error that ended the cursor, if any.
func (c *Cursor) Err() error { return c.err }

// Close ends the cursor, before its end if need be.
func (c *Cursor) Close() error {
	c.finish()
	return c.err
}

package hot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/meterstore/meterstore/series"
)

// A Cursor reads the rows of one part of a relation of a Read, a batch at
// a time, column by column: after Next, Null, Int64, Uint64 and Bytes
// return the current row's value of a column by its position among the
// columns asked for, as its Kind says. Values are decoded from the wire
// without a Go value per row; Bytes is valid until the next call of Next.
// A Cursor is for one goroutine at a time.
type Cursor struct {
	r     *Read
	conn  *readConn
	name  string
	first string // the DECLARE to send before the first FETCH
	kinds []Kind
	// The current batch: its values one after the other in arena, each
	// as an offset and a length (-1: NULL) in spans.
	arena []byte
	spans []int32
	row   int // rows of the batch read
	rows  int // rows in the batch
	last  bool
	// keys, if any, are the positions in a fetched row of the merge
	// key's columns, which come in primary key order: of each run of rows
	// with the same key only the last, the newest version, is handed
	// over. hidden is how many of them follow the columns asked for. The
	// batch's last row is tentative until the next row's key is known;
	// key holds its key.
	keys      []int
	hidden    int
	key       [][]byte
	tentative bool
	// The current row's values.
	ints  []int64
	uints []uint64
	vals  [][]byte
	err   error
	done  bool
}

// fetch reads the next batch into the cursor, holding its connection
// only while the batch crosses.
func (c *Cursor) fetch(ctx context.Context) error {
	start := time.Now()
	c.conn.mu.Lock()
	declared := c.first != ""
	mrr := c.conn.c.Conn().PgConn().Exec(ctx, c.first+fmt.Sprintf("FETCH FORWARD %d FROM %s", c.r.batch, c.name))
	c.first = ""
	c.carry()
	var (
		err     error
		fetched int
		results int
	)
	for mrr.NextResult() {
		rr := mrr.ResultReader()
		if results++; results == 1 && declared {
			if _, err = rr.Close(); err != nil {
				break
			}
			continue
		}
		if err = c.check(rr.FieldDescriptions()); err != nil {
			rr.Close()
			break
		}
		for rr.NextRow() {
			fetched++
			vals := rr.Values()
			if c.keys != nil {
				if c.tentative && c.sameKey(vals) {
					// A newer version of the same key replaces it.
					c.drop()
				}
				c.keep(vals)
			}
			c.add(vals)
		}
		if _, cerr := rr.Close(); cerr != nil {
			err = cerr
			break
		}
	}
	if cerr := mrr.Close(); err == nil {
		err = cerr
	}
	c.conn.mu.Unlock()
	if err != nil {
		return c.fail(err)
	}
	r := c.r
	r.first.CompareAndSwap(0, start.UnixNano())
	for now := time.Now().UnixNano(); ; {
		l := r.last.Load()
		if l >= now || r.last.CompareAndSwap(l, now) {
			break
		}
	}
	r.rows.Add(int64(fetched))
	r.bytes.Add(int64(len(c.arena)))
	if c.last = fetched < c.r.batch; c.last {
		c.tentative = false
	}
	if c.tentative {
		c.rows--
	}
	return nil
}

// carry starts the next batch with the tentative row of the last one, if
// any: only its successor tells whether it is the newest version.
func (c *Cursor) carry() {
	n := len(c.kinds)
	if !c.tentative {
		c.arena, c.spans, c.row, c.rows = c.arena[:0], c.spans[:0], 0, 0
		return
	}
	spans := c.spans[2*n*c.rows : 2*n*(c.rows+1)]
	base := spans[0]
	tail := c.arena[base:]
	copy(c.arena, tail)
	c.arena = c.arena[:len(tail)]
	copy(c.spans, spans)
	c.spans = c.spans[:2*n]
	for i := 0; i < len(c.spans); i += 2 {
		c.spans[i] -= base
	}
	c.row, c.rows = 0, 1
}

// drop removes the batch's last row.
func (c *Cursor) drop() {
	n := len(c.kinds)
	c.rows--
	c.arena = c.arena[:c.spans[2*n*c.rows]]
	c.spans = c.spans[:2*n*c.rows]
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

// add appends a row's values, those asked for, to the batch.
func (c *Cursor) add(vals [][]byte) {
	for _, v := range vals[:len(c.kinds)] {
		if v == nil {
			c.spans = append(c.spans, int32(len(c.arena)), -1)
			continue
		}
		c.spans = append(c.spans, int32(len(c.arena)), int32(len(v)))
		c.arena = append(c.arena, v...)
	}
	c.rows++
}

// check makes sure the batch's columns have the types and the format the
// kinds decode.
func (c *Cursor) check(fds []pgconn.FieldDescription) error {
	if len(fds) != len(c.kinds)+c.hidden {
		return fmt.Errorf("%d columns, want %d", len(fds), len(c.kinds)+c.hidden)
	}
	for i, fd := range fds[:len(c.kinds)] {
		if fd.DataTypeOID != kindOID[c.kinds[i]] || fd.Format != 1 {
			return &series.Error{Kind: series.InvariantViolation, Op: "read", Table: c.r.t.Name,
				Err: fmt.Errorf("column %s has type %d in format %d, want %d in binary", fd.Name, fd.DataTypeOID, fd.Format, kindOID[c.kinds[i]])}
		}
	}
	return nil
}

// Next reads the next row; false at the end or on an error (see Err).
func (c *Cursor) Next(ctx context.Context) bool {
	if c.done {
		return false
	}
	for c.row == c.rows {
		if c.last {
			c.finish()
			return false
		}
		if err := c.fetch(ctx); err != nil {
			return false
		}
	}
	spans := c.spans[2*len(c.kinds)*c.row:]
	c.row++
	for i, k := range c.kinds {
		off, n := spans[2*i], spans[2*i+1]
		if n < 0 {
			c.vals[i] = nil
			continue
		}
		b := c.arena[off : off+n : off+n]
		c.vals[i] = b
		var err error
		switch k {
		case KindText:
		case KindUint64:
			c.uints[i], err = decodeUint(b)
		default:
			c.ints[i], err = decodeInt(k, b)
		}
		if err != nil {
			c.fail(fmt.Errorf("column %d: %w", i, err))
			return false
		}
	}
	return true
}

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
	c.arena, c.spans = nil, nil
	c.r.s.done(c.conn)
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

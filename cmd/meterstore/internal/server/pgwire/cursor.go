package pgwire

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgproto3"
)

// A source runs a statement: it calls header once with the row
// description before any row (not at all for a statement without rows),
// then row once a row, and returns the command tag.
type source func(ctx context.Context, header func([]pgproto3.FieldDescription) error, row func([][]byte) error) (tag string, err error)

// cursorBuffer bounds the rows a running statement encodes ahead of the
// client: the hand-off between the store's callback and the connection.
const cursorBuffer = 64

// An item is what a statement hands to its connection: its row
// description, a row, or its end.
type item struct {
	fields []pgproto3.FieldDescription
	header bool
	row    [][]byte
	end    bool
	tag    string
	err    error
}

// A cursor is a statement running in a goroutine of its own, its rows
// handed over through a bounded channel, so that a portal can stop after
// some rows and resume with the next Execute, as the store streams by
// callback.
type cursor struct {
	items    chan item
	cancel   context.CancelFunc
	canceled atomic.Bool
	done     chan struct{}

	described bool // the header is read
	fields    []pgproto3.FieldDescription
	finished  bool
	tag       string
	err       error
}

// run starts src in a goroutine, canceled by the session's cancel key
// and ended by close.
func (s *session) run(src source) *cursor {
	ctx, cancel := context.WithCancel(context.Background())
	if d := s.settings.statementTimeout(); d > 0 {
		var cancelTimeout context.CancelFunc
		ctx, cancelTimeout = context.WithTimeout(ctx, d)
		c0 := cancel
		cancel = func() { cancelTimeout(); c0() }
	}
	c := &cursor{items: make(chan item, cursorBuffer), cancel: cancel, done: make(chan struct{})}
	s.mu.Lock()
	if s.running == nil {
		s.running = map[*cursor]struct{}{}
	}
	s.running[c] = struct{}{}
	s.mu.Unlock()
	hand := func(it item) error {
		select {
		case c.items <- it:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	go func() {
		defer close(c.done)
		defer close(c.items)
		defer func() {
			s.mu.Lock()
			delete(s.running, c)
			s.mu.Unlock()
		}()
		tag, err := src(ctx, func(fs []pgproto3.FieldDescription) error {
			return hand(item{header: true, fields: fs})
		}, func(r [][]byte) error {
			return hand(item{row: r})
		})
		switch {
		case err == nil:
		case c.canceled.Load():
			err = fmt.Errorf("%w: %w", errCanceled, err)
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			err = fmt.Errorf("%w: %w", errStatementTimeout, err)
		}
		c.items <- item{end: true, tag: tag, err: err} // a slot is free: the reader is done or reads on
	}()
	return c
}

// static returns a cursor of a statement answered already: its fields
// (nil for none), rows and tag.
func static(fields []pgproto3.FieldDescription, rows [][][]byte, tag string) *cursor {
	c := &cursor{described: true, fields: fields, finished: false, done: make(chan struct{}), cancel: func() {}}
	c.items = make(chan item, len(rows)+1)
	for _, r := range rows {
		c.items <- item{row: r}
	}
	c.items <- item{end: true, tag: tag}
	close(c.items)
	close(c.done)
	return c
}

// failed returns a cursor of a statement that failed with err.
func failed(err error) *cursor { return static(nil, nil, "").withErr(err) }

func (c *cursor) withErr(err error) *cursor {
	c.finished, c.err = true, err
	return c
}

// describe waits for the statement's row description: nil for a
// statement without rows.
func (c *cursor) describe() ([]pgproto3.FieldDescription, error) {
	if c.described || c.finished {
		return c.fields, c.err
	}
	it, ok := <-c.items
	switch {
	case !ok:
		c.finished, c.err = true, errors.New("pgwire: the statement ended without an end")
	case it.header:
		c.fields = it.fields
	case it.end:
		c.finished, c.tag, c.err = true, it.tag, it.err
	default:
		c.finished, c.err = true, errors.New("pgwire: a row before the row description")
	}
	c.described = true
	return c.fields, c.err
}

// fetch hands up to max rows (all when max is 0) to send and reports
// whether the statement has more: it stopped at max.
func (c *cursor) fetch(max int, send func([][]byte) error) (more bool, err error) {
	if _, err := c.describe(); err != nil {
		return false, err
	}
	for n := 0; !c.finished; {
		if max > 0 && n == max {
			return true, nil
		}
		it, ok := <-c.items
		switch {
		case !ok:
			c.finished, c.err = true, errors.New("pgwire: the statement ended without an end")
		case it.end:
			c.finished, c.tag, c.err = true, it.tag, it.err
		case it.header:
			c.finished, c.err = true, errors.New("pgwire: a second row description")
		default:
			n++
			if err := send(it.row); err != nil {
				c.close()
				return false, err
			}
		}
	}
	return false, c.err
}

// close ends the statement, if it runs, and waits for its goroutine.
func (c *cursor) close() {
	c.cancel()
	for range c.items {
	}
	<-c.done
}

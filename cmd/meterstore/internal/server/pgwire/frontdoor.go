package pgwire

import (
	"context"

	"github.com/meterstore/meterstore/store"
)

// Store is what the server asks of the front door: a statement's
// preparation (store.Prepare). New serves a *store.Store; the interface
// keeps the server to what it needs, as flightapi's Store does.
type Store interface {
	Prepare(ctx context.Context, sql string, o store.StatementOptions) (Statement, error)
}

// A Statement is a prepared, authorised query (store.Statement): its
// placeholders, its run, or its release unrun.
type Statement interface {
	Placeholders() []string
	Stream(ctx context.Context, begin func(*store.ResultHeader) error, row func([]any) error) error
	Close()
}

// frontDoor is a *store.Store as a Store.
type frontDoor struct{ *store.Store }

func (s frontDoor) Prepare(ctx context.Context, sql string, o store.StatementOptions) (Statement, error) {
	st, err := s.Store.Prepare(ctx, sql, o)
	if err != nil {
		return nil, err // not a nil *store.Statement in a non-nil Statement
	}
	return st, nil
}

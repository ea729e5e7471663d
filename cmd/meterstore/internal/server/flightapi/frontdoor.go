package flightapi

import (
	"context"

	"github.com/meterstore/meterstore/store"
)

// Store is what the service asks of the front door: the declared tables,
// a statement's preparation, and the queries of the catalog calls
// (catalog.go). New serves a *store.Store; the interface keeps the
// service to what it needs, as httpapi's Store does.
type Store interface {
	Tables() []string
	Prepare(ctx context.Context, sql string, o store.StatementOptions) (Statement, error)
	QueryStream(ctx context.Context, table, sql string, start func(*store.ResultHeader) error, row func([]any) error) error
}

// A Statement is a prepared, authorised query (store.Statement): the
// tables it reads, its run, or its release unrun.
type Statement interface {
	Tables() []string
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

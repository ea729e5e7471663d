package httpapi

import (
	"context"
	"time"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/idempotency"
	"github.com/meterstore/meterstore/store"
)

// Store is what the API asks of the front door: the declarations and
// status of the tables, a delivery's write (a batch, or a stream of
// batches) and a statement's preparation.
// New serves a *store.Store; the HTTP semantics (status codes, content
// negotiation, body limits, idempotent replay) are tested over another
// implementation, without a database.
type Store interface {
	Declaration(name string) (store.Table, error)
	Ping(ctx context.Context) error
	Status(ctx context.Context, now time.Time) []store.TableStatus
	WriteWith(ctx context.Context, table string, rows []store.Reading, o store.WriteOptions) (store.WriteResult, error)
	WriteEach(ctx context.Context, table string, next func() ([]store.Reading, error), done func(store.WriteResult, error) error, o store.WriteOptions) error
	Prepare(ctx context.Context, sql string, o store.StatementOptions) (Statement, error)
}

// A Statement is a prepared, authorised query: Stream runs it, calling
// begin with the result's header before the first row. Small says it
// reads few series (store.Statement.Small): it runs without waiting for
// a place among the running queries.
type Statement interface {
	Stream(ctx context.Context, begin func(*store.ResultHeader) error, row func([]any) error) error
	Small() bool
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

// records keep the outcomes of ingests sent with an idempotency key
// (package idempotency, on the hot tier's database).
type records interface {
	Claim(ctx context.Context, k idempotency.Key, now time.Time, lease, retention time.Duration) (claim, *idempotency.Outcome, error)
	Prune(ctx context.Context, before time.Time) (int64, error)
}

// A claim is a request's hold on its idempotency key (idempotency.Claim).
type claim interface {
	Extend(ctx context.Context, until time.Time) error
	Complete(ctx context.Context, o idempotency.Outcome) error
	Release(ctx context.Context) error
}

// pgRecords is an *idempotency.Records as records.
type pgRecords struct{ *idempotency.Records }

func (r pgRecords) Claim(ctx context.Context, k idempotency.Key, now time.Time, lease, retention time.Duration) (claim, *idempotency.Outcome, error) {
	c, done, err := r.Records.Claim(ctx, k, now, lease, retention)
	if c == nil {
		return nil, done, err
	}
	return c, done, err
}

package dashboard

import (
	"context"
	"time"

	"github.com/meterstore/meterstore/store"
)

// Store is what the dashboard asks of the front door: the tables' status,
// their archival history and the queries of their completeness. New
// serves a *store.Store, whose service tables hold the sessions too; the
// interface keeps the page to what it reads, as httpapi's Store does.
type Store interface {
	Status(ctx context.Context, now time.Time) []store.TableStatus
	ArchivalHistory(ctx context.Context, name string, since time.Time) ([]store.ArchivalCommit, error)
	QueryAt(ctx context.Context, name, sql string, opts store.ReadOptions) (*store.Result, error)
}

var _ Store = (*store.Store)(nil)

package catalog

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go/table"

	"github.com/meterstore/meterstore/consensus/postgres"
)

// LoadCurrent is LoadTable, with the log's commit it loaded.
func (c *Catalog) LoadCurrent(ctx context.Context, ident table.Identifier) (*table.Table, Commit, error) {
	h, err := c.current(ctx, ident)
	if err != nil {
		return nil, Commit{}, err
	}
	t, err := c.open(ctx, ident, h)
	return t, h, err
}

// HeadQuery returns, where the catalog's log is in PostgreSQL and db's
// connections reach its database, a scalar subquery of table ident's head
// (the Commit.Seq LoadCurrent would load now) for a statement on db: read
// there, it is the head in that statement's snapshot. ok is false where
// the log is elsewhere. arg binds a parameter and returns its placeholder.
func (c *Catalog) HeadQuery(ctx context.Context, ident table.Identifier, db postgres.RowQuerier) (q func(arg func(any) string) string, ok bool, err error) {
	ns, name, err := split(ident)
	if err != nil {
		return nil, false, err
	}
	log := c.log
	if o, ok := log.(*observedLog); ok {
		log = o.Log
	}
	pl, ok := log.(*postgres.Log)
	if !ok {
		return nil, false, nil
	}
	if ok, err := pl.Reaches(ctx, db); err != nil || !ok {
		if err != nil {
			err = fmt.Errorf("catalog: head of %s.%s: %w", ns, name, err)
		}
		return nil, false, err
	}
	shard := c.tableShard(ns, name)
	return func(arg func(any) string) string { return pl.HeadQuery(shard, arg) }, true, nil
}

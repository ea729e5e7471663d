package store

import (
	"context"
	"hash/fnv"

	"github.com/jackc/pgx/v5"
)

// ensureServiceTable runs stmts, the CREATE ... IF NOT EXISTS statements
// of one of the service's own tables in the hot tier's schema (after that
// schema's own), in one transaction under an advisory lock keyed by name
// and lockKey2: concurrent CREATE ... IF NOT EXISTS of one table can
// collide in the catalog, and two processes open one database.
func (s *Store) ensureServiceTable(ctx context.Context, name string, lockKey2 int32, stmts ...string) error {
	f := fnv.New32a()
	f.Write([]byte("meterstore." + name + "\x00" + s.hot.Schema()))
	return pgx.BeginFunc(ctx, s.opts.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, int32(f.Sum32()), lockKey2); err != nil {
			return err
		}
		stmts = append([]string{`CREATE SCHEMA IF NOT EXISTS ` + pgx.Identifier{s.hot.Schema()}.Sanitize()}, stmts...)
		for _, stmt := range stmts {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	})
}

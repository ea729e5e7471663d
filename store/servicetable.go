package store

import (
	"context"
	"hash/fnv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A ServiceDB is the hot tier's database as an application sees it for
// tables of its own beside the store's, such as meterstore serve's access
// tokens and idempotency records: the pool, the schema, and the one way
// to create such a table that two processes may race to create.
type ServiceDB struct {
	Pool   *pgxpool.Pool
	Schema string
}

// ServiceDB returns the database of the store's hot tier for the
// application's own tables.
func (s *Store) ServiceDB() ServiceDB {
	return ServiceDB{Pool: s.opts.Pool, Schema: s.hot.Schema()}
}

// Ident returns the qualified, quoted name of table name in the schema.
func (d ServiceDB) Ident(name string) string {
	return pgx.Identifier{d.Schema, name}.Sanitize()
}

// Ensure runs stmts, the CREATE ... IF NOT EXISTS statements of one table
// named name, in one transaction under an advisory lock keyed by the
// schema, name and lockKey2 (which tells tables of one name in other
// applications apart): concurrent CREATE ... IF NOT EXISTS of one table
// can collide in the catalog, and two processes open one database. The
// schema is created first if need be.
func (d ServiceDB) Ensure(ctx context.Context, name string, lockKey2 int32, stmts ...string) error {
	f := fnv.New32a()
	f.Write([]byte("meterstore." + name + "\x00" + d.Schema))
	return pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, int32(f.Sum32()), lockKey2); err != nil {
			return err
		}
		stmts = append([]string{`CREATE SCHEMA IF NOT EXISTS ` + pgx.Identifier{d.Schema}.Sanitize()}, stmts...)
		for _, stmt := range stmts {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	})
}

// ensureServiceTable creates one of the store's own service tables, as
// ServiceDB.Ensure does.
func (s *Store) ensureServiceTable(ctx context.Context, name string, lockKey2 int32, stmts ...string) error {
	return s.ServiceDB().Ensure(ctx, name, lockKey2, stmts...)
}

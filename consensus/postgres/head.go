package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// A RowQuerier runs a statement that answers one row: a pool, a
// connection or a transaction of the caller's.
type RowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// HeadQuery returns a scalar subquery of shard's head, its highest
// sequence number (NULL while it has no entry), for a statement of the
// caller's on the log's database (see Reaches): read there, it is the head
// in that statement's snapshot, which saves the caller a round trip and
// ties what it read to that head. arg binds a parameter and returns its
// placeholder.
func (l *Log) HeadQuery(shard string, arg func(any) string) string {
	// The marker at -1 is not an entry.
	return `(SELECT max(seqno) FROM ` + l.table + ` WHERE shard = ` + arg(shard) + `::text AND seqno >= 0)`
}

// identity names the database a connection is to, and the log's table
// there: one server's start, the database and the table's oid.
const identity = `SELECT pg_postmaster_start_time()::text || ' ' || current_database() || ' ' ||
	coalesce(to_regclass($1)::oid::text, '')`

// Reaches reports whether db's connections are to the log's database and
// see its table, so that HeadQuery in a statement on db reads the log.
func (l *Log) Reaches(ctx context.Context, db RowQuerier) (bool, error) {
	var theirs, ours string
	if err := db.QueryRow(ctx, identity, l.table).Scan(&theirs); err != nil {
		return false, fmt.Errorf("consensus/postgres: reaches: %w", err)
	}
	if err := l.pool.QueryRow(ctx, identity, l.table).Scan(&ours); err != nil {
		return false, classify("reaches", "", err, true)
	}
	return theirs == ours, nil
}

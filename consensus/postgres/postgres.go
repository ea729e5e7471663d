// Package postgres implements consensus.Log on one PostgreSQL table.
//
// Every operation is a single statement. Under READ COMMITTED each statement
// sees a snapshot taken when it starts, while an INSERT checks the primary
// key against the live index; the statements are built so that this gap is
// harmless, relying on one invariant: a shard's sequence numbers always form
// one contiguous interval [lo, head].
//
//   - CompareAndSet locks the predecessor row (expected) FOR KEY SHARE and
//     inserts expected+1. In a contiguous log "expected present and
//     expected+1 absent" is exactly "expected is the head"; the primary key
//     admits one of several concurrent writers. The shared lock conflicts
//     with DELETE, so a truncation cannot remove the predecessor between the
//     snapshot and the insert (which would let a stale writer re-create a
//     truncated row and break contiguity).
//   - The first write inserts a marker row at sequence number -1 together
//     with entry 0. Truncation never deletes the marker, so a stale first
//     writer always collides with it, whatever happened to entry 0.
//   - Truncate is one DELETE whose guard (an entry at or above cut exists)
//     and whose count come from the same statement snapshot.
//
// Under SERIALIZABLE the same statements run as single-statement serializable
// transactions; both levels may be mixed on one table.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/consensus"
)

// Isolation is the transaction isolation level the statements run under.
type Isolation string

// The supported isolation levels.
const (
	ReadCommitted Isolation = "read_committed"
	Serializable  Isolation = "serializable"
)

// ParseIsolation parses "read_committed" or "serializable".
func ParseIsolation(s string) (Isolation, error) {
	switch Isolation(strings.ToLower(strings.TrimSpace(s))) {
	case ReadCommitted, "read committed", "":
		return ReadCommitted, nil
	case Serializable:
		return Serializable, nil
	}
	return "", fmt.Errorf("%w: isolation %q: want read_committed or serializable", consensus.ErrInvalid, s)
}

// Options configure a Log.
type Options struct {
	Schema    string    // default "meterstore"
	Table     string    // default "consensus"
	Isolation Isolation // default ReadCommitted
}

// Log is a consensus.Log on a PostgreSQL table.
type Log struct {
	pool  *pgxpool.Pool
	table string // quoted schema.table
	iso   Isolation
	stmt  statements
}

var _ consensus.Log = (*Log)(nil)

// Open connects with cfg, which it copies, and creates the schema and table
// if they do not exist. Every connection of the pool runs at opts.Isolation.
func Open(ctx context.Context, cfg *pgxpool.Config, opts Options) (*Log, error) {
	if opts.Schema == "" {
		opts.Schema = "meterstore"
	}
	if opts.Table == "" {
		opts.Table = "consensus"
	}
	iso, err := ParseIsolation(string(opts.Isolation))
	if err != nil {
		return nil, fmt.Errorf("consensus/postgres: %w", err)
	}
	cfg = cfg.Copy()
	cfg.ConnConfig.RuntimeParams["default_transaction_isolation"] = strings.ReplaceAll(string(iso), "_", " ")
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("consensus/postgres: connect: %w", err)
	}
	l := &Log{
		pool:  pool,
		table: pgx.Identifier{opts.Schema, opts.Table}.Sanitize(),
		iso:   iso,
	}
	l.stmt = newStatements(l.table)
	if err := l.createTable(ctx, opts.Schema); err != nil {
		pool.Close()
		return nil, err
	}
	return l, nil
}

// Close closes the connection pool.
func (l *Log) Close() { l.pool.Close() }

// Isolation reports the isolation level of the log's statements.
func (l *Log) Isolation() Isolation { return l.iso }

func (l *Log) createTable(ctx context.Context, schema string) error {
	// The advisory lock keeps concurrent first opens from racing on the
	// catalog (CREATE ... IF NOT EXISTS is not safe against that).
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, "meterstore:"+l.table); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize()); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+l.table+` (
	shard  text   NOT NULL,
	seqno  bigint NOT NULL,
	data   bytea  NOT NULL,
	PRIMARY KEY (shard, seqno)
)`)
		return err
	})
	if err != nil {
		return fmt.Errorf("consensus/postgres: create %s: %w", l.table, err)
	}
	return nil
}

// Head implements consensus.Log.
func (l *Log) Head(ctx context.Context, shard string) (consensus.Entry, bool, error) {
	if err := consensus.ValidateShard(shard); err != nil {
		return consensus.Entry{}, false, fmt.Errorf("consensus/postgres: head: %w", err)
	}
	var e consensus.Entry
	err := l.pool.QueryRow(ctx, l.stmt.head, shard).Scan(&e.SeqNo, &e.Data)
	if errors.Is(err, pgx.ErrNoRows) {
		return consensus.Entry{}, false, nil
	}
	if err != nil {
		return consensus.Entry{}, false, classify("head", shard, err, true)
	}
	return e, true, nil
}

// Scan implements consensus.Log.
func (l *Log) Scan(ctx context.Context, shard string, from int64, limit int) ([]consensus.Entry, error) {
	if err := consensus.ValidateScan(shard, from, limit); err != nil {
		return nil, fmt.Errorf("consensus/postgres: scan: %w", err)
	}
	rows, err := l.pool.Query(ctx, l.stmt.scan, shard, from, int64(limit))
	if err != nil {
		return nil, classify("scan", shard, err, true)
	}
	var out []consensus.Entry
	for rows.Next() {
		var e consensus.Entry
		if err := rows.Scan(&e.SeqNo, &e.Data); err != nil {
			rows.Close()
			return nil, classify("scan", shard, err, true)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, classify("scan", shard, err, true)
	}
	return out, nil
}

// CompareAndSet implements consensus.Log.
func (l *Log) CompareAndSet(ctx context.Context, shard string, expected int64, data []byte) (consensus.Result, error) {
	if err := consensus.ValidateCompareAndSet(shard, expected, data); err != nil {
		return 0, fmt.Errorf("consensus/postgres: compare-and-set: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("consensus/postgres: compare-and-set %q: %w", shard, err) // nothing sent
	}
	if data == nil {
		data = []byte{} // nil would be sent as NULL
	}
	var tag pgconn.CommandTag
	var err error
	if expected == consensus.Empty {
		tag, err = l.pool.Exec(ctx, l.stmt.first, shard, data)
	} else {
		tag, err = l.pool.Exec(ctx, l.stmt.cas, shard, expected, data)
	}
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "23505": // unique_violation
		return consensus.ExpectationMismatch, nil
	case err != nil:
		return 0, classify("compare-and-set", shard, err, false)
	case tag.RowsAffected() == 0:
		return consensus.ExpectationMismatch, nil
	}
	return consensus.Committed, nil
}

// Truncate implements consensus.Log.
//
// It is linearizable because it is one statement: the guard that decides
// whether cut lies above the head and the DELETE that produces the count
// read the same snapshot, and the entries above cut that the guard relies
// on are never removed by this or any other truncation at a lower cut. A
// refusal decided in a second statement could disagree with the first.
func (l *Log) Truncate(ctx context.Context, shard string, cut int64) (int64, error) {
	if err := consensus.ValidateTruncate(shard, cut); err != nil {
		return 0, fmt.Errorf("consensus/postgres: truncate: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("consensus/postgres: truncate %q: %w", shard, err) // nothing sent
	}
	var ok bool
	var n int64
	if err := l.pool.QueryRow(ctx, l.stmt.truncate, shard, cut).Scan(&ok, &n); err != nil {
		return 0, classify("truncate", shard, err, false)
	}
	if !ok {
		return 0, fmt.Errorf("consensus/postgres: truncate %q at %d: %w", shard, cut, consensus.ErrCutAboveHead)
	}
	return n, nil
}

// classify wraps err with its consensus class. A server error means the
// statement failed and, in autocommit, changed nothing; a failure before
// the request was sent changed nothing either. Anything else may have
// committed, unless the operation only reads.
func classify(op, shard string, err error, readOnly bool) error {
	var pgErr *pgconn.PgError
	var class error
	switch {
	case errors.As(err, &pgErr):
		switch {
		case pgErr.Code == "40001", pgErr.Code == "40P01": // serialization_failure, deadlock_detected
			class = consensus.ErrTransient
		case sessionEnded(pgErr.Code):
			// The server ended the session under the statement: a read
			// changed nothing, a write may have committed just before.
			class = consensus.ErrIndeterminate
			if readOnly {
				class = consensus.ErrTransient
			}
		}
	case readOnly || pgconn.SafeToRetry(err):
		class = consensus.ErrTransient
	default:
		class = consensus.ErrIndeterminate
	}
	if class == nil {
		return fmt.Errorf("consensus/postgres: %s %q: %w", op, shard, err)
	}
	return fmt.Errorf("consensus/postgres: %s %q: %w: %w", op, shard, class, err)
}

// sessionEnded reports whether code says the server ended or refused the
// session rather than the statement: a shutdown, a crash, a server not yet
// accepting connections, or a connection exception.
func sessionEnded(code string) bool {
	switch code {
	case "57P01", "57P02", "57P03":
		return true
	}
	return strings.HasPrefix(code, "08")
}

// Table returns the quoted, schema-qualified name of the log's table.
func (l *Log) Table() string { return l.table }

// Package accesstoken keeps the short-lived access tokens meterstore
// serve hands out, the Iceberg REST catalog's OAuth2 tokens and the
// dashboard's sessions, in the hot tier's database as their SHA-256 only:
// a token issued by one process is accepted by every other process on the
// same database, and a copy of the table grants nothing.
package accesstoken

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/meterstore/meterstore/internal/pgerr"
	"github.com/meterstore/meterstore/store"
)

// table holds the tokens, in the hot tier's schema.
const table = "access_tokens"

// lockKey2 is the second half of the advisory lock under which the table
// is created.
const lockKey2 = math.MinInt32 + 11

// issuerColumn holds the SHA-256 that the issuing [[server.token]] had
// when it obtained the access token. Tables created before it existed get
// it added, empty in their rows, and a row without it is never honoured:
// such a token cannot be bound to a hash, and it is short-lived anyway.
const issuerColumn = "issuer_sha256"

// An Issuer is the [[server.token]] that obtained an access token: its
// name, and its hash at the time. Whoever honours the access token checks
// that a configured token still has both, so that removing a token, and
// rotating its hash under the same name, revokes what it obtained.
type Issuer struct {
	Name string
	Hash [32]byte
}

// A Table is the table of access tokens of a deployment.
type Table struct {
	db    store.ServiceDB
	ident string
}

// New returns the table of access tokens in db. Nothing is created until
// a token is recorded: most deployments never issue one.
func New(db store.ServiceDB) *Table {
	return &Table{db: db, ident: db.Ident(table)}
}

// ensure creates the table unless it exists, and adds the issuer column
// to one created before it.
func (t *Table) ensure(ctx context.Context) error {
	err := t.db.Ensure(ctx, table, lockKey2,
		`CREATE TABLE IF NOT EXISTS `+t.ident+` (
	token_sha256  bytea PRIMARY KEY CHECK (length(token_sha256) = 32),
	client        text NOT NULL,
	expires_at    timestamptz NOT NULL,
	`+issuerColumn+` bytea)`,
		`CREATE INDEX IF NOT EXISTS `+table+`_expiry ON `+t.ident+` (expires_at)`)
	if err == nil {
		err = t.ensureIssuerColumn(ctx)
	}
	if err != nil {
		return fmt.Errorf("accesstoken: the table of access tokens: %w", err)
	}
	return nil
}

// ensureIssuerColumn adds the issuer column to a table of access tokens
// created before it existed. It looks first, so that a current table
// takes no lock; two processes that both find it missing are ordered by
// the ALTER's lock, and the second adds nothing.
func (t *Table) ensureIssuerColumn(ctx context.Context) error {
	var has bool
	err := t.db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_attribute
WHERE attrelid = to_regclass($1) AND attname = $2 AND NOT attisdropped)`, t.ident, issuerColumn).Scan(&has)
	if err != nil || has {
		return err
	}
	_, err = t.db.Pool.Exec(ctx, `ALTER TABLE `+t.ident+` ADD COLUMN IF NOT EXISTS `+issuerColumn+` bytea`)
	return err
}

// Record records the SHA-256 of an access token issued to issuer,
// accepted until expires, and deletes the tokens that expired before now.
func (t *Table) Record(ctx context.Context, sum [32]byte, issuer Issuer, now, expires time.Time) error {
	if err := t.ensure(ctx); err != nil {
		return err
	}
	b := &pgx.Batch{}
	b.Queue(`DELETE FROM `+t.ident+` WHERE expires_at < $1`, now)
	b.Queue(`INSERT INTO `+t.ident+` (token_sha256, client, expires_at, `+issuerColumn+`) VALUES ($1, $2, $3, $4)`,
		sum[:], issuer.Name, expires, issuer.Hash[:])
	if err := t.db.Pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("accesstoken: record: %w", err)
	}
	return nil
}

// Issuer returns the issuer of the access token with SHA-256 sum, if it is
// recorded with its issuer and has not expired at now; ok is false
// otherwise, also before any token was recorded. A token recorded by a
// version that did not record the issuer is not found.
func (t *Table) Issuer(ctx context.Context, sum [32]byte, now time.Time) (issuer Issuer, ok bool, err error) {
	var hash []byte
	err = t.db.Pool.QueryRow(ctx, `SELECT client, `+issuerColumn+` FROM `+t.ident+`
WHERE token_sha256 = $1 AND expires_at > $2 AND `+issuerColumn+` IS NOT NULL`,
		sum[:], now).Scan(&issuer.Name, &hash)
	switch {
	case errors.Is(err, pgx.ErrNoRows), pgerr.NoTable(err), pgerr.NoColumn(err):
		// No such token; no table (none was ever issued), or one without
		// the issuer column (only older versions issued any).
		return Issuer{}, false, nil
	case err != nil:
		return Issuer{}, false, fmt.Errorf("accesstoken: look up: %w", err)
	}
	if len(hash) != len(issuer.Hash) {
		return Issuer{}, false, nil
	}
	copy(issuer.Hash[:], hash)
	return issuer, true, nil
}

// Revoke deletes the access token with SHA-256 sum, so that it is refused
// from now on: a logout. Revoking a token that is not recorded is no
// error.
func (t *Table) Revoke(ctx context.Context, sum [32]byte) error {
	_, err := t.db.Pool.Exec(ctx, `DELETE FROM `+t.ident+` WHERE token_sha256 = $1`, sum[:])
	if err != nil && !pgerr.NoTable(err) { // no table: none was ever issued
		return fmt.Errorf("accesstoken: revoke: %w", err)
	}
	return nil
}

package store

// Access tokens: the short-lived bearer tokens that meterstore serve's
// OAuth2 endpoint issues to catalog clients, kept in the hot tier's
// database as their SHA-256 only, so that a token issued by one process is
// accepted by every other process on the same database, and a copy of the
// table grants nothing.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// accessTokenTable holds the tokens, in the hot tier's schema.
const accessTokenTable = "access_tokens"

// accessTokenLockKey2 is the second half of the advisory lock under which
// the table is created; the first is a hash of the schema.
const accessTokenLockKey2 = math.MinInt32 + 11

func (s *Store) accessTokenIdent() string {
	return pgx.Identifier{s.hot.Schema(), accessTokenTable}.Sanitize()
}

// issuerColumn holds the SHA-256 that the issuing [[server.token]] had
// when it obtained the access token. Tables created before it existed get
// it added, empty in their rows, and a row without it is never honoured:
// such a token cannot be bound to a hash, and it is short-lived anyway.
const issuerColumn = "issuer_sha256"

// ensureAccessTokens creates the table unless it exists, and adds the
// issuer column to one created before it. It runs when a token is
// recorded, not at Open: most deployments never issue one.
func (s *Store) ensureAccessTokens(ctx context.Context) error {
	err := s.ensureServiceTable(ctx, "access_tokens", accessTokenLockKey2,
		`CREATE TABLE IF NOT EXISTS `+s.accessTokenIdent()+` (
	token_sha256  bytea PRIMARY KEY CHECK (length(token_sha256) = 32),
	client        text NOT NULL,
	expires_at    timestamptz NOT NULL,
	`+issuerColumn+` bytea)`,
		`CREATE INDEX IF NOT EXISTS `+accessTokenTable+`_expiry ON `+s.accessTokenIdent()+` (expires_at)`)
	if err == nil {
		err = s.ensureIssuerColumn(ctx)
	}
	if err != nil {
		return fmt.Errorf("store: the table of access tokens: %w", err)
	}
	return nil
}

// ensureIssuerColumn adds the issuer column to a table of access tokens
// created before it existed. It looks first, so that a current table
// takes no lock; two processes that both find it missing are ordered by
// the ALTER's lock, and the second adds nothing.
func (s *Store) ensureIssuerColumn(ctx context.Context) error {
	var has bool
	err := s.opts.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_attribute
WHERE attrelid = to_regclass($1) AND attname = $2 AND NOT attisdropped)`, s.accessTokenIdent(), issuerColumn).Scan(&has)
	if err != nil || has {
		return err
	}
	_, err = s.opts.Pool.Exec(ctx, `ALTER TABLE `+s.accessTokenIdent()+` ADD COLUMN IF NOT EXISTS `+issuerColumn+` bytea`)
	return err
}

// A TokenIssuer is the [[server.token]] that obtained an access token:
// its name, and its hash at the time. Whoever honours the access token
// checks that a configured token still has both, so that removing a
// token, and rotating its hash under the same name, revokes what it
// obtained.
type TokenIssuer struct {
	Name string
	Hash [32]byte
}

// RecordAccessToken records the SHA-256 of an access token issued to
// issuer, accepted until expires, and deletes the tokens that expired
// before now.
func (s *Store) RecordAccessToken(ctx context.Context, sum [32]byte, issuer TokenIssuer, now, expires time.Time) error {
	if err := s.ensureAccessTokens(ctx); err != nil {
		return err
	}
	b := &pgx.Batch{}
	b.Queue(`DELETE FROM `+s.accessTokenIdent()+` WHERE expires_at < $1`, now)
	b.Queue(`INSERT INTO `+s.accessTokenIdent()+` (token_sha256, client, expires_at, `+issuerColumn+`) VALUES ($1, $2, $3, $4)`,
		sum[:], issuer.Name, expires, issuer.Hash[:])
	if err := s.opts.Pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("store: record access token: %w", err)
	}
	return nil
}

// AccessTokenIssuer returns the issuer of the access token with SHA-256
// sum, if it is recorded with its issuer and has not expired at now; ok
// is false otherwise. A token recorded by a version that did not record
// the issuer is not found.
func (s *Store) AccessTokenIssuer(ctx context.Context, sum [32]byte, now time.Time) (issuer TokenIssuer, ok bool, err error) {
	var hash []byte
	err = s.opts.Pool.QueryRow(ctx, `SELECT client, `+issuerColumn+` FROM `+s.accessTokenIdent()+`
WHERE token_sha256 = $1 AND expires_at > $2 AND `+issuerColumn+` IS NOT NULL`,
		sum[:], now).Scan(&issuer.Name, &hash)
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return TokenIssuer{}, false, nil
	case errors.As(err, &pgErr) && pgErr.Code == "42P01": // undefined_table: none was ever issued
		return TokenIssuer{}, false, nil
	case errors.As(err, &pgErr) && pgErr.Code == "42703": // undefined_column: only older versions issued any
		return TokenIssuer{}, false, nil
	case err != nil:
		return TokenIssuer{}, false, fmt.Errorf("store: look up access token: %w", err)
	}
	if len(hash) != len(issuer.Hash) {
		return TokenIssuer{}, false, nil
	}
	copy(issuer.Hash[:], hash)
	return issuer, true, nil
}

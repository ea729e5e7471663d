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

// ensureAccessTokens creates the table unless it exists. It runs when a
// token is first recorded, not at Open: most deployments never issue one.
func (s *Store) ensureAccessTokens(ctx context.Context) error {
	err := s.ensureServiceTable(ctx, "access_tokens", accessTokenLockKey2,
		`CREATE TABLE IF NOT EXISTS `+s.accessTokenIdent()+` (
	token_sha256 bytea PRIMARY KEY CHECK (length(token_sha256) = 32),
	client       text NOT NULL,
	expires_at   timestamptz NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS `+accessTokenTable+`_expiry ON `+s.accessTokenIdent()+` (expires_at)`)
	if err != nil {
		return fmt.Errorf("store: the table of access tokens: %w", err)
	}
	return nil
}

// RecordAccessToken records the SHA-256 of an access token issued to
// client, accepted until expires, and deletes the tokens that expired
// before now.
func (s *Store) RecordAccessToken(ctx context.Context, sum [32]byte, client string, now, expires time.Time) error {
	if err := s.ensureAccessTokens(ctx); err != nil {
		return err
	}
	b := &pgx.Batch{}
	b.Queue(`DELETE FROM `+s.accessTokenIdent()+` WHERE expires_at < $1`, now)
	b.Queue(`INSERT INTO `+s.accessTokenIdent()+` (token_sha256, client, expires_at) VALUES ($1, $2, $3)`, sum[:], client, expires)
	if err := s.opts.Pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("store: record access token: %w", err)
	}
	return nil
}

// AccessTokenClient returns the client an access token with SHA-256 sum
// was issued to, if it is recorded and has not expired at now; ok is
// false otherwise.
func (s *Store) AccessTokenClient(ctx context.Context, sum [32]byte, now time.Time) (client string, ok bool, err error) {
	err = s.opts.Pool.QueryRow(ctx, `SELECT client FROM `+s.accessTokenIdent()+` WHERE token_sha256 = $1 AND expires_at > $2`,
		sum[:], now).Scan(&client)
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", false, nil
	case errors.As(err, &pgErr) && pgErr.Code == "42P01": // undefined_table: none was ever issued
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("store: look up access token: %w", err)
	}
	return client, true, nil
}

package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// RevokeAccessToken deletes the access token with SHA-256 sum, so that it
// is refused from now on: a logout. Revoking a token that is not recorded
// is no error.
func (s *Store) RevokeAccessToken(ctx context.Context, sum [32]byte) error {
	_, err := s.opts.Pool.Exec(ctx, `DELETE FROM `+s.accessTokenIdent()+` WHERE token_sha256 = $1`, sum[:])
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" { // undefined_table: none was ever issued
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: revoke access token: %w", err)
	}
	return nil
}

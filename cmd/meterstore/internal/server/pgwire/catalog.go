package pgwire

import (
	"context"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/auth"
	"github.com/meterstore/meterstore/config"
)

// sessionKey is the context key of the session a Catalog statement runs
// for (withSession).
type sessionKey struct{}

// withSession returns ctx carrying the session's token, which MayRead and
// User answer from.
func (s *session) withSession(ctx context.Context) context.Context {
	return context.WithValue(ctx, sessionKey{}, s.tok)
}

// MayRead reports whether the session whose statement ctx belongs to may
// read table: a Catalog shows a token limited to some tables only those,
// as the store's system tables do. It is true outside a session.
func MayRead(ctx context.Context, table string) bool {
	tok, ok := ctx.Value(sessionKey{}).(config.Token)
	return !ok || auth.MayTouch(tok, table)
}

// User returns the user of the session whose statement ctx belongs to,
// its token's name, which a Catalog answers current_user with; false
// outside a session.
func User(ctx context.Context) (string, bool) {
	tok, ok := ctx.Value(sessionKey{}).(config.Token)
	return tok.Name, ok
}

// A Catalog answers the introspection statements clients send (pg_catalog
// and information_schema queries, version(), psql's \dt and \d), which the
// store does not run. The server asks it of every statement once the
// session's token is known to hold scope query.
type Catalog interface {
	// Handles reports whether sql is a statement the catalog answers.
	Handles(sql string) bool
	// ServerVersion is the server_version reported at startup.
	ServerVersion() string
	// Describe returns the parameter types and the row description of
	// sql, whose parameter types the client gave as paramOIDs (0 for
	// none), without running it.
	Describe(ctx context.Context, sql string, paramOIDs []uint32) (params []uint32, fields []pgproto3.FieldDescription, err error)
	// Run runs sql with the parameters params as the client bound them
	// (of types paramOIDs, in formats paramFormats), calling describe
	// once with the row description, its columns in resultFormats, then
	// row once a row, and returns the command tag. A *pgconn.PgError it
	// returns is answered with its own SQLSTATE and message.
	Run(ctx context.Context, sql string, params [][]byte, paramOIDs []uint32, paramFormats, resultFormats []int16,
		describe func([]pgproto3.FieldDescription) error, row func([][]byte) error) (tag string, err error)
}

package pgwire

import (
	"context"

	"github.com/jackc/pgx/v5/pgproto3"
)

// mayKey is the context key of the session token's table check.
type mayKey struct{}

// MayRead reports whether the session whose statement ctx belongs to may
// read table: a Catalog shows a token limited to some tables only those,
// as the store's system tables do. It is true outside a session.
func MayRead(ctx context.Context, table string) bool {
	may, ok := ctx.Value(mayKey{}).(func(string) bool)
	return !ok || may(table)
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

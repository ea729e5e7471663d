package archive

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// countPartition returns the number of rows of partition name.
func countPartition(ctx context.Context, pool *pgxpool.Pool, schema, name string) (int64, error) {
	var n int64
	err := pool.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, name}.Sanitize()).Scan(&n)
	return n, err
}

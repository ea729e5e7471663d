package pgtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PartitionBound renders at as a bound of a partition of parent, in the
// unit of its partition key: the instant itself, or, where the key is the
// step layout's step, the count of steps of length step since 1970. Tests
// that attach partitions behind MeterStore's back, as an operator or a
// restored database would, use it to stay true to the table's layout.
func PartitionBound(t testing.TB, ctx context.Context, db interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, parent string, step time.Duration, at time.Time) string {
	t.Helper()
	var key string
	if err := db.QueryRow(ctx, `SELECT pg_get_partkeydef($1::regclass)`, parent).Scan(&key); err != nil {
		t.Fatalf("partition key of %s: %v", parent, err)
	}
	if strings.Contains(key, "step") {
		return fmt.Sprint(at.Unix() / int64(step/time.Second))
	}
	return "'" + at.UTC().Format("2006-01-02 15:04:05+00") + "'"
}

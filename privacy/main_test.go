package privacy

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/series"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// newPool returns a pool on a fresh database; tracer, if not nil, sees
// every statement.
func newPool(t testing.TB, tracer pgx.QueryTracer) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 8
	cfg.ConnConfig.Tracer = tracer
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// testKey is the subject key of the tests' registries.
var testKey = []byte("meterstore test subject key, 32+")

// newRegistry opens a registry with testKey in the default schema of a
// fresh database.
func newRegistry(t testing.TB) (*Registry, *pgxpool.Pool) {
	t.Helper()
	pool := newPool(t, nil)
	reg, err := Open(context.Background(), pool, Options{SubjectKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	return reg, pool
}

// berlin returns the Europe/Berlin location, loaded independently of the
// metering calendar the package uses.
func berlin(t testing.TB) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// count returns the number of rows of a relation.
func count(t testing.TB, pool *pgxpool.Pool, relation string) int64 {
	t.Helper()
	var n int64
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM `+relation).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// mustRegister registers a value and fails the test on an error.
func mustRegister(t testing.TB, reg *Registry, naturalID string, at time.Time) string {
	t.Helper()
	ref, err := reg.Register(context.Background(), naturalID, at)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// wantKind checks that err is an *Error of kind k.
func wantKind(t testing.TB, err error, k series.Kind) {
	t.Helper()
	var e *series.Error
	if !errors.As(err, &e) || e.Kind != k {
		t.Fatalf("error %v (%T), want *Error of kind %v", err, err, k)
	}
}

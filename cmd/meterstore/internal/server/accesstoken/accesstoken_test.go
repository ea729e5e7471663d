package accesstoken

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// newDB returns the service database of a fresh PostgreSQL database, and
// its pool.
func newDB(t *testing.T) (store.ServiceDB, *pgxpool.Pool) {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return store.ServiceDB{Pool: pool, Schema: "meterstore"}, pool
}

// TestAccessTokens: a token recorded by one process is found by another on
// the same database, with its issuer, until it expires; an unknown token
// is not found, before any was recorded too; expired ones are deleted by
// the next record.
func TestAccessTokens(t *testing.T) {
	db, pool := newDB(t)
	s1, s2 := New(db), New(db) // two processes on one database
	ctx := t.Context()
	t0 := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	a, b := sha256.Sum256([]byte("token-a")), sha256.Sum256([]byte("token-b"))
	spark := Issuer{Name: "spark", Hash: sha256.Sum256([]byte("spark's token"))}
	duckdb := Issuer{Name: "duckdb", Hash: sha256.Sum256([]byte("duckdb's token"))}

	if c, ok, err := s2.Issuer(ctx, a, t0); err != nil || ok || c != (Issuer{}) {
		t.Fatalf("before any token: %+v %v %v", c, ok, err)
	}
	if err := s1.Record(ctx, a, spark, t0, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if c, ok, err := s2.Issuer(ctx, a, t0.Add(59*time.Minute)); err != nil || !ok || c != spark {
		t.Fatalf("a recorded token on the other store: %+v %v %v; want %+v", c, ok, err, spark)
	}
	if _, ok, err := s2.Issuer(ctx, b, t0); err != nil || ok {
		t.Fatalf("an unknown token: %v %v", ok, err)
	}
	if _, ok, err := s1.Issuer(ctx, a, t0.Add(time.Hour)); err != nil || ok {
		t.Fatalf("a token at its expiry: %v %v", ok, err)
	}
	if err := s2.Record(ctx, b, duckdb, t0.Add(2*time.Hour), t0.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+s1.ident).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d tokens recorded after the expired one was pruned (%v), want 1", n, err)
	}
	if err := s2.Record(ctx, b, duckdb, t0, t0.Add(time.Hour)); err == nil {
		t.Error("the same token recorded twice")
	}
}

// TestAccessTokensOfAnOlderVersion: a table of access tokens created by a
// version that recorded no issuer gets the issuer column when a token is
// next recorded, in a database in use; its tokens, which cannot be bound
// to a hash, are refused before and after, and new ones are found.
func TestAccessTokensOfAnOlderVersion(t *testing.T) {
	db, pool := newDB(t)
	s := New(db)
	ctx := t.Context()
	t0 := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	old, fresh := sha256.Sum256([]byte("issued by an older version")), sha256.Sum256([]byte("issued now"))
	// The table as the older version created it, with one of its tokens.
	for _, stmt := range []string{
		`CREATE SCHEMA meterstore`,
		`CREATE TABLE ` + s.ident + ` (
	token_sha256 bytea PRIMARY KEY CHECK (length(token_sha256) = 32),
	client       text NOT NULL,
	expires_at   timestamptz NOT NULL)`,
		`CREATE INDEX access_tokens_expiry ON ` + s.ident + ` (expires_at)`,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `INSERT INTO `+s.ident+` VALUES ($1, 'spark', $2)`, old[:], t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if c, ok, err := s.Issuer(ctx, old, t0); err != nil || ok {
		t.Fatalf("an older version's token before the upgrade: %+v %v %v; want not found", c, ok, err)
	}
	spark := Issuer{Name: "spark", Hash: sha256.Sum256([]byte("spark's token"))}
	for range 2 { // the second finds the column and adds nothing
		if err := s.Record(ctx, fresh, spark, t0, t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `DELETE FROM `+s.ident+` WHERE token_sha256 = $1`, fresh[:]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Record(ctx, fresh, spark, t0, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if c, ok, err := s.Issuer(ctx, old, t0); err != nil || ok {
		t.Errorf("an older version's token after the upgrade: %+v %v %v; want not found", c, ok, err)
	}
	if c, ok, err := s.Issuer(ctx, fresh, t0); err != nil || !ok || c != spark {
		t.Errorf("a token recorded after the upgrade: %+v %v %v; want %+v", c, ok, err, spark)
	}
	var rows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+s.ident).Scan(&rows); err != nil || rows != 2 {
		t.Errorf("%d rows (%v); want the older token kept until it expires, and the new one", rows, err)
	}
}

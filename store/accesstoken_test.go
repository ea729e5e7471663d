package store

import (
	"crypto/sha256"
	"testing"
	"time"
)

// TestAccessTokens: a token recorded by one store is found by another on
// the same database until it expires; an unknown token is not found,
// before any was recorded too; expired ones are deleted by the next
// record.
func TestAccessTokens(t *testing.T) {
	e := newEnv(t)
	s1 := e.open(t, Options{})
	s2 := e.open(t, Options{})
	ctx := t.Context()
	t0 := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	a, b := sha256.Sum256([]byte("token-a")), sha256.Sum256([]byte("token-b"))

	if c, ok, err := s2.AccessTokenClient(ctx, a, t0); err != nil || ok || c != "" {
		t.Fatalf("before any token: %q %v %v", c, ok, err)
	}
	if err := s1.RecordAccessToken(ctx, a, "spark", t0, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if c, ok, err := s2.AccessTokenClient(ctx, a, t0.Add(59*time.Minute)); err != nil || !ok || c != "spark" {
		t.Fatalf("a recorded token on the other store: %q %v %v", c, ok, err)
	}
	if _, ok, err := s2.AccessTokenClient(ctx, b, t0); err != nil || ok {
		t.Fatalf("an unknown token: %v %v", ok, err)
	}
	if _, ok, err := s1.AccessTokenClient(ctx, a, t0.Add(time.Hour)); err != nil || ok {
		t.Fatalf("a token at its expiry: %v %v", ok, err)
	}
	if err := s2.RecordAccessToken(ctx, b, "duckdb", t0.Add(2*time.Hour), t0.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM `+s1.accessTokenIdent()).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d tokens recorded after the expired one was pruned (%v), want 1", n, err)
	}
	if err := s2.RecordAccessToken(ctx, b, "duckdb", t0, t0.Add(time.Hour)); err == nil {
		t.Error("the same token recorded twice")
	}
}

package store

import (
	"context"
	"testing"
)

// TestPing: a live server answers; a closed pool does not.
func TestPing(t *testing.T) {
	e := newEnv(t)
	s := e.open(t, Options{})
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	e.pool.Close()
	if err := s.Ping(context.Background()); err == nil {
		t.Error("Ping after the pool closed: nil")
	}
}

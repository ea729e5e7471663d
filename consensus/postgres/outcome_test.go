package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/consensus"
	"github.com/meterstore/meterstore/consensus/consensustest"
	"github.com/meterstore/meterstore/internal/pgtest"
)

// TestOutcomeClasses checks that callers can tell an unknown outcome from a
// failure that changed nothing.
func TestOutcomeClasses(t *testing.T) {
	url := pgtest.NewDB(t)
	l := open(t, url, Options{})
	for i := range 3 {
		consensustest.Append(t, l, "s", int64(i)-1, "x")
	}

	// A CaS sent to the server and then abandoned: it waits for a row lock
	// that a DELETE-strength lock holds, and its context ends meanwhile.
	blocker, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Close(context.Background())
	tx, err := blocker.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), "SELECT 1 FROM "+l.table+" WHERE shard = 's' AND seqno = 2 FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	_, err = l.CompareAndSet(ctx, "s", 2, []byte("late"))
	cancel()
	if !consensus.IsIndeterminate(err) || consensus.IsRetryable(err) {
		t.Fatalf("CaS abandoned after it was sent: %v; want an unknown outcome", err)
	}
	tx.Rollback(t.Context())

	// A context that ended before anything was sent changes nothing.
	done, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = l.CompareAndSet(done, "s", 2, []byte("never"))
	if err == nil || consensus.IsIndeterminate(err) {
		t.Fatalf("CaS with a context ended before sending: %v; want a determinate failure", err)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("CaS with a context ended before sending: %v; want context.Canceled in the chain", err)
	}

	// Reads have no effect, so their failures are never unknown.
	ctx, cancel = context.WithCancel(t.Context())
	cancel()
	if _, _, err := l.Head(ctx, "s"); err == nil || consensus.IsIndeterminate(err) {
		t.Fatalf("Head with an ended context: %v", err)
	}
}

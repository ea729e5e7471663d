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

// TestSessionEndedRead: a read whose session the server ends under it
// (pg_terminate_backend: SQLSTATE 57P01, as in a shutdown) failed without
// changing anything, so it is worth retrying.
func TestSessionEndedRead(t *testing.T) {
	url := pgtest.NewDB(t)
	l := open(t, url, Options{})
	consensustest.Append(t, l, "s", -1, "x")
	admin, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	// A read that runs long enough to be terminated under: the log's own
	// statement blocks behind a lock on its row while we end its session.
	tx, err := admin.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(t.Context(), "LOCK TABLE "+l.table+" IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, _, err := l.Head(t.Context(), "s")
		errc <- err
	}()
	var pid int32
	for i := 0; pid == 0; i++ {
		if i == 500 {
			t.Fatal("the log's read never waited on the lock")
		}
		err := admin.QueryRow(t.Context(), `SELECT coalesce(max(pid), 0) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`).Scan(&pid)
		if err != nil {
			t.Fatal(err)
		}
		if pid == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	// The lock belongs to tx, on the same connection: terminate from a
	// second one.
	killer, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer killer.Close(context.Background())
	if _, err := killer.Exec(t.Context(), "SELECT pg_terminate_backend($1)", pid); err != nil {
		t.Fatal(err)
	}
	err = <-errc
	if err == nil || !consensus.IsRetryable(err) || consensus.IsIndeterminate(err) {
		t.Fatalf("Head whose session was terminated: %v; want a retryable failure", err)
	}
}

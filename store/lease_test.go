package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestExpiryUnderLease: snapshot expiry and the watermark re-stamp commit
// only under the table's archive lease. While another session holds it
// (as an archival in flight does), both refuse with the retryable
// ErrLeaseHeld and change nothing; once it is free, expiry runs.
func TestExpiryUnderLease(t *testing.T) {
	ctx := t.Context()
	s := newEnv(t).open(t, Options{Snapshots: SnapshotRetention{MaxAge: time.Millisecond, KeepLast: 1}})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(5)); err != nil {
		t.Fatal(err)
	}
	for d := range 4 {
		mustWrite(t, s, []Reading{qh(1, d, 4, "A", 1, 1000)})
	}
	if out, err := s.Archive(ctx, "power", dayN(5)); err != nil || len(out.Windows) == 0 {
		t.Fatalf("archive: %+v, %v", out, err)
	}
	before, err := s.Snapshots(ctx, "power")
	if err != nil || len(before) < 2 {
		t.Fatalf("snapshots: %d, %v; want several", len(before), err)
	}
	time.Sleep(5 * time.Millisecond) // past MaxAge, so that expiry has work
	held := 0
	err = s.arch.WithLease(ctx, "power", func(context.Context) error {
		held++
		if _, err := s.ExpireSnapshots(ctx, "power", time.Now()); !errors.Is(err, ErrLeaseHeld) || !IsRetryable(err) {
			t.Errorf("expiry while the lease is held elsewhere: %v; want retryable ErrLeaseHeld", err)
		}
		if _, err := s.ReassertWatermark(ctx, "power"); !errors.Is(err, ErrLeaseHeld) {
			t.Errorf("re-stamp while the lease is held elsewhere: %v; want ErrLeaseHeld", err)
		}
		return nil
	})
	if err != nil || held != 1 {
		t.Fatalf("holding the lease: %v, ran %d times", err, held)
	}
	if after, err := s.Snapshots(ctx, "power"); err != nil || len(after) != len(before) {
		t.Fatalf("snapshots after the refused expiry: %d, %v; want %d", len(after), err, len(before))
	}
	e, err := s.ExpireSnapshots(ctx, "power", time.Now())
	if err != nil || len(e.Expired) == 0 {
		t.Fatalf("expiry with the lease free: %+v, %v; want snapshots expired", e, err)
	}
	// And the reverse: an archival while expiry holds the lease is
	// contended, and moves nothing.
	err = s.arch.WithLease(ctx, "power", func(context.Context) error {
		out, err := s.Archive(ctx, "power", dayN(6))
		if err != nil || out.Status != ArchiveLeaseContended {
			t.Errorf("archival while the lease is held: %+v, %v; want lease_contended", out, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

package hot

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/series"
)

func dayAt(n int) time.Time { return day.AddDate(0, 0, n) }

// TestFenceRaisesTheFloor: no partition is created below the floor, which
// only rises; one at or above it is; a hot_tables from before the floor
// gets its column from Ensure.
func TestFenceRaisesTheFloor(t *testing.T) {
	h, pool := newTier(t, Options{})
	ctx := t.Context()
	tab := lastgang("fenced")
	declare(t, h, tab)
	if _, ok, err := h.PartitionFloor(ctx, tab); err != nil || ok {
		t.Fatalf("floor of a new table: %v, %v; want none", ok, err)
	}
	parts, err := h.Fence(ctx, tab, dayAt(1))
	if err != nil || len(parts) != 2 || !parts[1].From.Equal(dayAt(1)) {
		t.Fatalf("fence: %+v, %v; want the two partitions", parts, err)
	}
	if _, err := h.Fence(ctx, tab, dayAt(0)); err != nil {
		t.Fatal(err)
	}
	if f, ok, err := h.PartitionFloor(ctx, tab); err != nil || !ok || !f.Equal(dayAt(1)) {
		t.Fatalf("floor %v, %v, %v; want day 1, never lowered", f, ok, err)
	}
	_, err = h.CreatePartitions(ctx, tab, dayAt(-1), dayAt(-1))
	if !errors.Is(err, ErrBelowFloor) || !series.IsKind(err, series.InvalidInput) {
		t.Fatalf("creating below the floor: %v; want InvalidInput wrapping ErrBelowFloor", err)
	}
	if created, err := h.CreatePartitions(ctx, tab, dayAt(1), dayAt(2)); err != nil || len(created) != 1 {
		t.Fatalf("creating at and above the floor: %+v, %v", created, err)
	}
	if _, err := h.Fence(ctx, tab, dayAt(1).Add(time.Hour)); err == nil {
		t.Errorf("a fence off the partition grid was taken")
	}

	// A hot_tables from before the floor existed.
	if _, err := pool.Exec(ctx, `ALTER TABLE meterstore.hot_tables DROP COLUMN partition_floor`); err != nil {
		t.Fatal(err)
	}
	if err := h.Ensure(ctx, tab); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := h.PartitionFloor(ctx, tab); err != nil || ok {
		t.Fatalf("floor after the column came back: %v, %v", ok, err)
	}
}

// TestFenceWaitsForACreation holds a partition's creation open before its
// commit: a fence taken meanwhile waits for it and lists the partition,
// so an archival either sees a new partition in its window or keeps it
// from being made.
func TestFenceWaitsForACreation(t *testing.T) {
	h, pool := newTier(t, Options{DDLLockTimeout: 30 * time.Second})
	ctx := t.Context()
	tab := lastgang("raced")
	declare(t, h, tab)
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	p := Partition{Name: partitionName(tab, dayAt(4)), From: dayAt(4), To: dayAt(5), Attached: true}
	if ok, err := h.createPartitionTx(ctx, tx, tab, p); err != nil || !ok {
		t.Fatalf("create in a transaction: %v, %v", ok, err)
	}
	type result struct {
		parts []Partition
		err   error
	}
	done := make(chan result, 1)
	go func() {
		parts, err := h.Fence(ctx, tab, dayAt(6))
		done <- result{parts, err}
	}()
	// Wait, bounded, until the fence waits for the creation's lock.
	for i := 0; ; i++ {
		var waiting bool
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted)`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		if i == 500 {
			t.Fatal("the fence never waited for the creation's lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || len(r.parts) != 3 || !r.parts[2].From.Equal(dayAt(4)) {
		t.Fatalf("fence after a creation: %+v, %v; want the new partition listed", r.parts, r.err)
	}
	if _, err := h.CreatePartitions(ctx, tab, dayAt(5), dayAt(5)); !errors.Is(err, ErrBelowFloor) {
		t.Fatalf("creation after the fence: %v; want ErrBelowFloor", err)
	}
}

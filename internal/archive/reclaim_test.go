package archive

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestReclaimSkipsLockedPartition: a reader holds a detached partition
// past its reader grace (as a long query that planned it does), so the
// drop cannot get its lock within the DDL lock timeout. The cycle skips
// that partition, drops the other one and stays healthy, without an
// error; once the reader is done, the next cycle drops it.
func TestReclaimSkipsLockedPartition(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, 4)
	o := newOracle()
	fill(t, e, o, 2, 0, 1)
	cfg := dayConfig
	cfg.ReaderGrace = time.Hour
	a := e.archiver(t, cfg)
	if out, err := a.Cycle(ctx, e.t, e.ct, dayN(3)); err != nil || len(out.Windows) != 2 || len(out.Dropped) != 0 {
		t.Fatalf("first cycle: %+v, %v; want days 0 and 1 archived, nothing dropped", out, err)
	}
	reader, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Rollback(context.Background())
	if _, err := reader.Exec(ctx, `SELECT count(*) FROM meterstore.lastgang_p20260302`); err != nil {
		t.Fatal(err)
	}
	out, err := a.Cycle(ctx, e.t, e.ct, dayN(3).Add(2*time.Hour))
	if err != nil || out.Status == Failed || !out.Healthy() {
		t.Fatalf("cycle with a partition held: %+v, %v; want healthy, no error", out, err)
	}
	if !slices.EqualFunc(out.Dropped, []time.Time{dayN(1)}, time.Time.Equal) {
		t.Fatalf("dropped %v with day 0 held; want day 1 only", out.Dropped)
	}
	if err := reader.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	out, err = a.Cycle(ctx, e.t, e.ct, dayN(3).Add(3*time.Hour))
	if err != nil || !slices.EqualFunc(out.Dropped, []time.Time{dayN(0)}, time.Time.Equal) {
		t.Fatalf("cycle after the reader left: %+v, %v; want day 0 dropped", out, err)
	}
	checkTiers(t, e, o.snapshot())
}

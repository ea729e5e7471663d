package archive

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/series"
)

// partitionDays returns whether each of e's partitions is attached, by
// day number.
func partitionDays(t *testing.T, e *env) map[int]bool {
	t.Helper()
	parts, err := e.hot.Partitions(t.Context(), e.t)
	if err != nil {
		t.Fatal(err)
	}
	days := map[int]bool{}
	for _, p := range parts {
		days[int(p.From.Sub(day0)/(24*time.Hour))] = p.Attached
	}
	return days
}

// TestWriteCreatesMissingPartitions: a row for a day without a partition
// gets one, before the first partition too; a row whose day lies beyond
// the accept horizon refuses its batch, naming the row and the horizon,
// and creates nothing.
func TestWriteCreatesMissingPartitions(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, 2)
	o := newOracle()
	wr := NewRouter(e.hot, e.cold)
	wr.clock = func() time.Time { return dayN(3).Add(10 * time.Hour) }
	wr.AcceptAhead = 2 * 24 * time.Hour // up to the partition of day 5

	batch := []series.Reading{qh(0, 4, 1, 1, 10), qh(0, 5, 95, 1, 11), qh(0, -1, 3, 1, 12), qh(0, 1, 3, 1, 13)}
	res, err := wr.Write(ctx, e.t, e.ct, batch)
	if err != nil || res.Inserted != 4 {
		t.Fatalf("write: %+v, %v", res, err)
	}
	o.ack(batch)
	if days := partitionDays(t, e); !days[-1] || !days[4] || !days[5] || days[2] || len(days) != 5 {
		t.Errorf("partitions by day %v; want days -1, 0, 1, 4 and 5", days)
	}

	far := []series.Reading{qh(1, 4, 1, 1, 20), qh(1, 6, 0, 1, 21)}
	_, err = wr.Write(ctx, e.t, e.ct, far)
	var se *series.Error
	if !errors.As(err, &se) || se.Kind != series.InvalidInput || !slices.Equal(se.Rows, []int{1}) ||
		!strings.Contains(err.Error(), "accept horizon") || !strings.Contains(err.Error(), "up to 2026-03-08T00:00:00.000000Z, accept_ahead 2d") {
		t.Fatalf("row beyond the horizon: %v; want invalid input naming row 1 and the horizon", err)
	}
	if days := partitionDays(t, e); len(days) != 5 {
		t.Errorf("partitions by day %v after a refused row: none may be created", days)
	}
	checkTiers(t, e, o.snapshot())
}

// TestWriteNeverCreatesBelowWatermark: a Router whose watermark is stale
// sends a late correction for an archived, dropped day to the hot tier.
// The partition floor refuses to create the day's partition again, and the
// row goes to the cold tier once W is read anew.
func TestWriteNeverCreatesBelowWatermark(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, 4)
	o := newOracle()
	fill(t, e, o, 1, 0, 1, 2, 3)
	wr := NewRouter(e.hot, e.cold)
	first := []series.Reading{qh(2, 3, 0, 1, 1)}
	if _, err := wr.Write(ctx, e.t, e.ct, first); err != nil { // reads W: none yet
		t.Fatal(err)
	}
	o.ack(first)
	a := e.archiver(t, dayConfig)
	cycles(t, a, e, dayN(3)) // W = day 2; days 0 and 1 dropped
	if days := partitionDays(t, e); len(days) != 2 {
		t.Fatalf("partitions by day %v; want days 0 and 1 dropped", days)
	}

	late := []series.Reading{qh(3, 0, 7, 1, 77), qh(3, 1, 7, 1, 78), qh(3, 2, 7, 1, 79)}
	res, err := wr.Write(ctx, e.t, e.ct, late)
	if err != nil || res.Late != 2 || res.Inserted != 3 {
		t.Fatalf("write with a stale watermark: %+v, %v; want two late of three", res, err)
	}
	o.ack(late)
	if days := partitionDays(t, e); days[0] || days[1] || len(days) != 2 {
		t.Errorf("partitions by day %v: an archived day's partition was created again", days)
	}
	if _, err := e.hot.CreatePartitions(ctx, e.t, dayN(1), dayN(1)); !errors.Is(err, hot.ErrBelowFloor) {
		t.Errorf("creating an archived day's partition: %v; want ErrBelowFloor", err)
	}
	checkTiers(t, e, o.snapshot())
}

// TestArchivalFencesItsWindow races a partition's creation against an
// archival deterministically, at both sides of the fence. Created after
// the window was planned but before it was fenced, the partition makes the
// archival plan again and archive it; created after the fence, it is
// refused, and the write that needed it is retryable and lands in the
// cold tier once the window is committed. Either way no attached
// partition is left below W.
func TestArchivalFencesItsWindow(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, 1)
	o := newOracle()
	fill(t, e, o, 1, 0)
	wr := NewRouter(e.hot, e.cold)
	a := e.archiver(t, dayConfig)

	// At day 5, the first window is day 0's partition, the second the
	// empty stretch [day 1, day 4): day 2 gets its partition in between.
	planned := 0
	row2 := []series.Reading{qh(0, 2, 40, 1, 240)}
	a.crashAt = func(step string) {
		if step != "planned" {
			return
		}
		if planned++; planned == 2 {
			if _, err := wr.Write(ctx, e.t, e.ct, row2); err != nil {
				t.Errorf("write while a window is planned: %v", err)
			}
			o.ack(row2)
		}
	}
	cycles(t, a, e, dayN(5))
	if w, _, err := e.cold.Watermark(ctx, e.ct); err != nil || !w.Equal(dayN(4)) {
		t.Fatalf("W = %v, %v; want day 4", w, err)
	}
	checkTiers(t, e, o.snapshot())

	// At day 8 the window is the empty stretch [day 4, day 7); day 5
	// asks for its partition once the window is fenced.
	row5 := []series.Reading{qh(0, 5, 8, 1, 580)}
	var during error
	a.crashAt = func(step string) {
		if step != "after-detach" {
			return
		}
		if _, err := e.hot.CreatePartitions(ctx, e.t, dayN(5), dayN(5)); !errors.Is(err, hot.ErrBelowFloor) {
			t.Errorf("creating a partition in a fenced window: %v; want ErrBelowFloor", err)
		}
		short, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_, during = wr.Write(short, e.t, e.ct, row5)
	}
	cycles(t, a, e, dayN(8))
	a.crashAt = nil
	if !series.IsRetryable(during) {
		t.Errorf("write into a fenced window: %v; want a retryable error", during)
	}
	if days := partitionDays(t, e); days[5] {
		t.Errorf("partitions by day %v: day 5 created below W", days)
	}
	res, err := wr.Write(ctx, e.t, e.ct, row5)
	if err != nil || res.Late != 1 {
		t.Fatalf("write after the commit: %+v, %v; want a late correction", res, err)
	}
	o.ack(row5)
	checkTiers(t, e, o.snapshot())
}

// breakWarehouse makes e's warehouse unreachable, for root too: the
// directory moves away and a file takes its place, so that nothing can
// recreate it. The returned function brings it back.
func breakWarehouse(t *testing.T, e *env) func() {
	t.Helper()
	away := e.dir + ".away"
	if err := os.Rename(e.dir, away); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.dir, []byte("not a warehouse"), 0o600); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore := func() {
		if restored {
			return
		}
		restored = true
		if err := os.Remove(e.dir); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(away, e.dir); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(restore)
	return restore
}

// TestColdUnreachable: with the warehouse and its catalog log gone, rows
// at or above the last watermark read are stored (also by a Router that
// never read one, by the ledger's), partitions are created, a batch with
// a late correction fails whole and retryably, and archival fails
// retryably, before or after its detach. Back again, archival resumes
// and every acknowledged reading is stored once.
func TestColdUnreachable(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, 6)
	o := newOracle()
	fill(t, e, o, 1, 0, 1, 2)
	a := e.archiver(t, dayConfig)
	cycles(t, a, e, dayN(3)) // W = day 2
	wr := NewRouter(e.hot, e.cold)
	wr.clock = func() time.Time { return dayN(6) }
	warm := []series.Reading{qh(1, 2, 0, 1, 1)}
	if _, err := wr.Write(ctx, e.t, e.ct, warm); err != nil {
		t.Fatal(err)
	}
	o.ack(warm)

	restore := breakWarehouse(t, e)
	hotRows := []series.Reading{qh(1, 3, 1, 1, 2), qh(1, 4, 1, 1, 3), qh(1, 7, 1, 1, 4)} // day 7 has no partition
	if _, err := wr.Write(ctx, e.t, e.ct, hotRows); err != nil {
		t.Fatalf("hot rows with the cold tier away: %v", err)
	}
	o.ack(hotRows)
	unread := NewRouter(e.hot, e.cold) // never read W
	unread.Recorded = a.RecordedWatermark
	more := []series.Reading{qh(2, 3, 1, 1, 5)}
	if _, err := unread.Write(ctx, e.t, e.ct, more); err != nil {
		t.Fatalf("hot rows by a new Router with the cold tier away: %v", err)
	}
	o.ack(more)

	mixed := []series.Reading{qh(1, 5, 2, 1, 6), qh(1, 0, 2, 2, 7)}
	for _, r := range []*Router{wr, unread} {
		_, err := r.Write(ctx, e.t, e.ct, mixed)
		if !series.IsRetryable(err) || !errors.Is(err, ErrColdUnreachable) {
			t.Errorf("a late correction with the cold tier away: %v; want retryable, ErrColdUnreachable", err)
		}
	}
	out, err := a.Cycle(ctx, e.t, e.ct, dayN(5))
	if out.Status != Failed || !series.IsRetryable(err) || !errors.Is(err, ErrColdUnreachable) {
		t.Errorf("archival with the cold tier away: %+v, %v; want failed, retryable, ErrColdUnreachable", out, err)
	}
	restore()

	// Gone between the detach and the commit, the warehouse fails the
	// archival retryably; writes to the detached day wait for it.
	restore = nil
	a.crashAt = func(step string) {
		if step == "after-detach" && restore == nil {
			restore = breakWarehouse(t, e)
		}
	}
	out, err = a.Cycle(ctx, e.t, e.ct, dayN(5))
	a.crashAt = nil
	if out.Status != Failed || !series.IsRetryable(err) || !errors.Is(err, ErrColdUnreachable) {
		t.Errorf("archival losing the cold tier after its detach: %+v, %v", out, err)
	}
	inFlight := []series.Reading{qh(3, 2, 9, 1, 8)} // day 2 is detached
	if _, err := wr.Write(ctx, e.t, e.ct, inFlight); !series.IsRetryable(err) {
		t.Errorf("a row of a detached day with the cold tier away: %v; want retryable", err)
	}
	restore()

	cycles(t, a, e, dayN(5)) // W = day 4
	for _, b := range [][]series.Reading{mixed, inFlight} {
		if _, err := wr.Write(ctx, e.t, e.ct, b); err != nil {
			t.Fatalf("retry once the cold tier is back: %v", err)
		}
		o.ack(b)
	}
	if w, _, err := e.cold.Watermark(ctx, e.ct); err != nil || !w.Equal(dayN(4)) {
		t.Fatalf("W = %v, %v; want day 4", w, err)
	}
	checkTiers(t, e, o.snapshot())
}

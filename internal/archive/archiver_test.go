package archive

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/series"
)

var dayConfig = Config{SettlementLag: 24 * time.Hour, Step: 24 * time.Hour}

// fill writes the quarter hours of meters 0 to meters-1 on days.
func fill(t *testing.T, e *env, o *oracle, meters int, days ...int) {
	t.Helper()
	for _, d := range days {
		for i := range meters {
			rs := make([]series.Reading, 96)
			for s := range rs {
				rs[s] = qh(i, d, s, 1, int64(i*1_000_000+d*1000+s))
			}
			write(t, e, o, rs)
		}
	}
}

func TestCycleArchivesDueWindows(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, 6)
	o := newOracle()
	fill(t, e, o, 3, 0, 1, 2, 3, 4, 5)
	cfg := dayConfig
	cfg.MaxWindowsPerCycle, cfg.ReaderGrace, cfg.ChunkRows = 3, time.Hour, 100
	a := e.archiver(t, cfg)
	now := dayN(5) // days 0 to 3 are due

	out, err := a.Cycle(ctx, e.t, e.ct, now)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != Archived || len(out.Windows) != 3 || !out.Watermark.Equal(dayN(3)) {
		t.Fatalf("first cycle: %+v, want three windows up to day 3", out)
	}
	for i, w := range out.Windows {
		if !w.From.Equal(dayN(i)) || !w.To.Equal(dayN(i+1)) || w.Rows != 3*96 {
			t.Errorf("window %d: %+v", i, w)
		}
	}
	checkTiers(t, e, o.snapshot())

	out, err = a.Cycle(ctx, e.t, e.ct, now)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != Archived || len(out.Windows) != 1 || !out.Watermark.Equal(dayN(4)) || len(out.Dropped) != 0 {
		t.Fatalf("second cycle: %+v, want day 3 archived and nothing dropped within the grace", out)
	}
	out, err = a.Cycle(ctx, e.t, e.ct, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != NothingDue || !slices.Equal(out.Dropped, []time.Time{dayN(0), dayN(1), dayN(2), dayN(3)}) {
		t.Fatalf("third cycle: %+v, want days 0 to 3 dropped after the grace", out)
	}
	checkTiers(t, e, o.snapshot())
	parts, err := e.hot.Partitions(ctx, e.t)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 || !parts[0].From.Equal(dayN(4)) {
		t.Errorf("partitions left: %+v, want days 4 and 5", parts)
	}
}

func TestEmptyStretchIsOneCommit(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, 1)
	if _, err := e.hot.CreatePartitions(ctx, e.t, dayN(30), dayN(30)); err != nil {
		t.Fatal(err)
	}
	o := newOracle()
	fill(t, e, o, 2, 0, 30)
	a := e.archiver(t, dayConfig)
	out, err := a.Cycle(ctx, e.t, e.ct, dayN(40))
	if err != nil {
		t.Fatal(err)
	}
	want := []Window{{From: dayN(0), To: dayN(1), Rows: 192}, {From: dayN(1), To: dayN(30)}, {From: dayN(30), To: dayN(31), Rows: 192}, {From: dayN(31), To: dayN(39)}}
	if !slices.Equal(out.Windows, want) {
		t.Fatalf("windows %+v, want %+v", out.Windows, want)
	}
	checkTiers(t, e, o.snapshot())
}

func TestDetachDeferredChangesNothing(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, 3)
	o := newOracle()
	fill(t, e, o, 2, 0, 1)
	// A reader in an open transaction holds ACCESS SHARE on the parent,
	// which DETACH must wait for.
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT count(*) FROM meterstore.lastgang`); err != nil {
		t.Fatal(err)
	}
	a := e.archiver(t, dayConfig)
	out, err := a.Cycle(ctx, e.t, e.ct, dayN(3))
	if err != nil {
		t.Fatal(err)
	}
	// Benign: the next cycle tries again, and nobody is paged.
	if out.Status != Deferred || len(out.Windows) != 0 || !out.Healthy() || out.Waiting == "" {
		t.Fatalf("outcome %+v (healthy %v), want deferred, healthy, saying what it waits for", out, out.Healthy())
	}
	if _, ok, err := e.cold.Watermark(ctx, e.ct); err != nil || ok {
		t.Fatalf("watermark set (%v) or error %v after a deferral", ok, err)
	}
	parts, err := e.hot.Partitions(ctx, e.t)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if !p.Attached {
			t.Errorf("partition %s detached by a deferred cycle", p.Name)
		}
	}
	tx.Rollback(ctx)
	out, err = a.Cycle(ctx, e.t, e.ct, dayN(3))
	if err != nil || out.Status != Archived || len(out.Windows) != 2 {
		t.Fatalf("after the reader left: %+v, %v; want two windows", out, err)
	}
	checkTiers(t, e, o.snapshot())
}

// TestAttachedPartitionBelowWatermark: a partition attached below W,
// created behind MeterStore's back (as a restored database brings one
// back), is reconciled by the next cycle when the cold tier holds every
// row it holds: detached, to be dropped after the reader grace. One holding
// a row the cold tier lacks is a violation, named, and stays attached.
func TestAttachedPartitionBelowWatermark(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, 3)
	o := newOracle()
	fill(t, e, o, 1, 0, 1)
	a := e.archiver(t, dayConfig)
	cycles(t, a, e, dayN(3))
	// The hot tier refuses to re-create an archived day's partition: rows
	// written there would sit below W, where no query looks.
	if _, err := e.hot.CreatePartitions(ctx, e.t, dayN(0), dayN(0)); !errors.Is(err, hot.ErrBelowFloor) {
		t.Fatalf("re-creating an archived partition: %v; want ErrBelowFloor", err)
	}
	// Someone does it behind MeterStore's back.
	bound := func(at time.Time) string {
		return pgtest.PartitionBound(t, ctx, e.pool, "meterstore.lastgang", 15*time.Minute, at)
	}
	if _, err := e.pool.Exec(ctx, `CREATE TABLE meterstore.lastgang_p20260302 PARTITION OF meterstore.lastgang
FOR VALUES FROM (`+bound(dayN(0))+`) TO (`+bound(dayN(1))+`)`); err != nil {
		t.Fatal(err)
	}
	attached := func() bool {
		t.Helper()
		parts, err := e.hot.Partitions(ctx, e.t)
		if err != nil {
			t.Fatal(err)
		}
		return len(parts) > 0 && parts[0].From.Equal(dayN(0)) && parts[0].Attached
	}
	// With a row the cold tier does not hold: kept and reported.
	if _, err := e.hot.Write(ctx, e.t, []series.Reading{qh(7, 0, 3, 1, 42)}); err != nil {
		t.Fatal(err)
	}
	out, err := a.Cycle(ctx, e.t, e.ct, dayN(10))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Violations) != 1 || out.Healthy() || len(out.Reconciled) != 0 || !strings.Contains(out.Violations[0], "1 of its 1 rows") {
		t.Fatalf("outcome %+v, want one violation", out)
	}
	if !attached() {
		t.Error("the partition below W holding a row the cold tier lacks must stay attached")
	}
	// Empty, as the cold tier holds all it holds: reconciled.
	if _, err := e.pool.Exec(ctx, `DELETE FROM meterstore.lastgang_p20260302`); err != nil {
		t.Fatal(err)
	}
	out, err = a.Cycle(ctx, e.t, e.ct, dayN(10))
	if err != nil || !out.Healthy() || len(out.Reconciled) != 1 || !out.Reconciled[0].Equal(dayN(0)) {
		t.Fatalf("outcome %+v, %v; want the partition reconciled", out, err)
	}
	if attached() {
		t.Error("the reconciled partition is still attached")
	}
}

func TestLeaseHeldElsewhere(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, 3)
	o := newOracle()
	fill(t, e, o, 1, 0, 1)
	l, err := acquireLease(ctx, e.pool, e.hot.Schema(), e.t.Name)
	if err != nil || l == nil {
		t.Fatalf("lease: %v, %v", l, err)
	}
	// Released on a failure too: the pool closes only once its
	// connection is back.
	held := true
	defer func() {
		if held {
			l.release(context.Background())
		}
	}()
	a := e.archiver(t, dayConfig)
	out, err := a.Cycle(ctx, e.t, e.ct, dayN(3))
	if err != nil || out.Status != LeaseContended || !out.Healthy() {
		t.Fatalf("outcome %+v (healthy %v), %v; want lease_contended, healthy", out, out.Healthy(), err)
	}
	if _, ok, _ := e.cold.Watermark(ctx, e.ct); ok {
		t.Fatal("a contended cycle moved the watermark")
	}
	l.release(ctx)
	held = false
	if out, err := a.Cycle(ctx, e.t, e.ct, dayN(3)); err != nil || out.Status != Archived {
		t.Fatalf("after release: %+v, %v", out, err)
	}
}

// TestLeaseRace starts two archivers, each with its own pool, on the same
// table at the same moment, round after round: each window is archived by
// exactly one of them.
func TestLeaseRace(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, 9)
	o := newOracle()
	fill(t, e, o, 2, 0, 1, 2, 3, 4, 5, 6, 7, 8)
	cfg := dayConfig
	cfg.MaxWindowsPerCycle = 1
	var archivers [2]*Archiver
	for i := range archivers {
		pc, err := pgxpool.ParseConfig(e.url)
		if err != nil {
			t.Fatal(err)
		}
		pool, err := pgxpool.NewWithConfig(ctx, pc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		h, err := hot.New(pool, hot.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if archivers[i], err = New(h, e.cold, pool, cfg); err != nil {
			t.Fatal(err)
		}
	}
	var windows []Window
	contended := 0
	for round := 0; round < 20; round++ {
		var outs [2]Outcome
		var errs [2]error
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, a := range archivers {
			wg.Go(func() {
				<-start
				outs[i], errs[i] = a.Cycle(ctx, e.t, e.ct, dayN(9))
			})
		}
		close(start)
		wg.Wait()
		done := true
		for i := range outs {
			if errs[i] != nil {
				t.Fatalf("round %d, archiver %d: %v", round, i, errs[i])
			}
			windows = append(windows, outs[i].Windows...)
			switch outs[i].Status {
			case LeaseContended:
				contended++
				done = false
			case Archived:
				done = false
			}
		}
		if done {
			break
		}
	}
	slices.SortFunc(windows, func(a, b Window) int { return a.From.Compare(b.From) })
	if len(windows) != 8 {
		t.Fatalf("windows %+v, want each of days 0 to 7 once", windows)
	}
	for i, w := range windows {
		if !w.From.Equal(dayN(i)) || !w.To.Equal(dayN(i+1)) || w.Rows != 192 {
			t.Errorf("window %d: %+v", i, w)
		}
	}
	if contended == 0 {
		t.Error("no cycle met the other's lease")
	}
	checkSnapshots(t, e)
	checkTiers(t, e, o.snapshot())
}

// checkSnapshots fails unless every window in the cold history was
// archived by exactly one snapshot.
func checkSnapshots(t *testing.T, e *env) {
	t.Helper()
	ice, err := e.cold.Iceberg(t.Context(), e.ct)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, s := range ice.Metadata().Snapshots() {
		if s.Summary == nil || s.Summary.Properties[cold.SummaryArchivedFrom] == "" {
			continue
		}
		from := s.Summary.Properties[cold.SummaryArchivedFrom]
		if seen[from] {
			t.Errorf("window from %s archived twice", from)
		}
		seen[from] = true
	}
}

func TestWriterRoutesLateCorrections(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, 4)
	o := newOracle()
	fill(t, e, o, 1, 0, 1, 2)
	a := e.archiver(t, dayConfig)
	cycles(t, a, e, dayN(3)) // W = day 2
	wr := NewRouter(e.hot, e.cold)
	batch := []series.Reading{qh(0, 0, 5, 2, 42), qh(0, 2, 5, 2, 43), qh(0, 1, 7, 2, 44), qh(0, 3, 1, 1, 45)}
	res, err := wr.Write(ctx, e.t, e.ct, batch)
	if err != nil {
		t.Fatal(err)
	}
	// Days 0 to 2 have version 1 of the readings stored: version 2
	// supersedes it, below W (late, in the cold tier) as above it.
	if want := "[superseded superseded superseded inserted]"; res.Late != 2 || res.Inserted != 1 || res.Superseded != 3 || fmt.Sprint(res.Status) != want {
		t.Fatalf("result %+v, want 2 late of 4, statuses %s", res, want)
	}
	o.ack(batch)
	// Redelivery is a no-op in both tiers.
	if res, err = wr.Write(ctx, e.t, e.ct, batch); err != nil || res.Present != 4 {
		t.Fatalf("redelivery: %+v, %v", res, err)
	}
	// A value restated under a stored key and version below W is refused,
	// and the error names the row in the caller's batch.
	restated := []series.Reading{qh(0, 3, 2, 1, 1), qh(0, 0, 5, 2, 99)}
	_, err = wr.Write(ctx, e.t, e.ct, restated)
	var he *series.Error
	if !errors.As(err, &he) || he.Kind != series.IntegrityViolation || !slices.Equal(he.Rows, []int{1}) {
		t.Fatalf("restated late value: %v, want an integrity violation of row 1", err)
	}
	w, _, _ := e.cold.Watermark(ctx, e.ct)
	if !w.Equal(dayN(2)) {
		t.Errorf("W moved to %v on a late correction", w)
	}
	checkTiers(t, e, o.snapshot())
}

func TestReadPartitionInChunks(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, 1)
	o := newOracle()
	fill(t, e, o, 3, 0)
	if err := e.hot.Detach(ctx, e.t, dayN(0)); err != nil {
		t.Fatal(err)
	}
	var got []series.Reading
	var sizes []int
	err := e.hot.ScanPartition(ctx, e.t, hot.Partition{Name: "lastgang_p20260302", From: dayN(0)}, 50, func(rs []series.Reading) error {
		sizes = append(sizes, len(rs))
		got = append(got, rs...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 288 || slices.Max(sizes) > 50 || len(sizes) != 6 {
		t.Fatalf("%d rows in chunks %v, want 288 in chunks of at most 50", len(got), sizes)
	}
	if !slices.IsSortedFunc(got, func(a, b series.Reading) int {
		if c := strings.Compare(a.MaLo, b.MaLo); c != 0 {
			return c
		}
		return a.From.Compare(b.From)
	}) {
		t.Error("rows not in primary key order")
	}
	want := o.snapshot()
	for _, r := range got {
		if c, ok := want[key(&r)]; !ok || c != content(&r) {
			t.Errorf("read %s as %s, wrote %s", key(&r), content(&r), c)
		}
		if r.RecordedAt.IsZero() || !r.BalancingDay.IsValid() {
			t.Errorf("reading %s lacks what the store derives", key(&r))
		}
	}
}

package store

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meterstore/meterstore/internal/metrics/metricstest"
	"github.com/meterstore/meterstore/privacy"
)

// logLines is a slog.Handler that keeps the message of every record, in
// the order they were logged, each prefixed by its "table" attribute.
type logLines struct {
	mu    *sync.Mutex
	lines *[]string
	attrs []slog.Attr
}

func newLogLines() *logLines { return &logLines{mu: &sync.Mutex{}, lines: &[]string{}} }

func (l *logLines) Enabled(context.Context, slog.Level) bool { return true }

func (l *logLines) Handle(_ context.Context, r slog.Record) error {
	table := ""
	for _, a := range l.attrs {
		if a.Key == "table" {
			table = a.Value.String()
		}
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "table" {
			table = a.Value.String()
		}
		return true
	})
	l.mu.Lock()
	*l.lines = append(*l.lines, table+": "+r.Message)
	l.mu.Unlock()
	return nil
}

func (l *logLines) WithAttrs(as []slog.Attr) slog.Handler {
	c := *l
	c.attrs = append(slices.Clone(l.attrs), as...)
	return &c
}

func (l *logLines) WithGroup(string) slog.Handler { return l }

// index returns the positions of the lines that start with prefix.
func (l *logLines) index(prefix string) []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int
	for i, s := range *l.lines {
		if strings.HasPrefix(s, prefix) {
			out = append(out, i)
		}
	}
	return out
}

// TestMaintenanceNothingBeforeStart builds a maintenance loop with every
// step on and an interval of a millisecond, and waits: nothing was
// archived and no partition made until Start, whose first cycle then
// does both (which shows that the look would have seen a cycle).
func TestMaintenanceNothingBeforeStart(t *testing.T) {
	ctx := t.Context()
	s := newEnv(t).open(t, Options{Snapshots: SnapshotRetention{MaxAge: time.Millisecond, KeepLast: 1}})
	mustWrite(t, s, []Reading{qh(1, 0, 4, "A", 1, 1000)})
	partitions := func() int {
		ps, err := s.hot.Partitions(ctx, s.tables[0].decl)
		if err != nil {
			t.Fatal(err)
		}
		return len(ps)
	}
	before := partitions()
	m := s.Maintenance().Interval(time.Millisecond).Clock(func() time.Time { return dayN(5) }).
		ExpireSnapshots(true).RemoveOrphans(time.Hour).Compact(true, CompactOptions{})
	time.Sleep(500 * time.Millisecond) // hundreds of intervals
	if _, ok, err := s.Watermark(ctx, "power"); err != nil || ok {
		t.Fatalf("W set (%v, %v) before the loop was started", ok, err)
	}
	if n := partitions(); n != before {
		t.Fatalf("%d partitions before the loop was started, %d when it was built", n, before)
	}
	h := m.Start(ctx)
	for _, n := h.Last(); n == 0; _, n = h.Last() {
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	h.Stop()
	if w, ok, err := s.Watermark(ctx, "power"); err != nil || !ok || !w.After(dayN(0)) {
		t.Fatalf("W %v, %v, %v after the first cycle; want day 0 archived", w, ok, err)
	}
	if n := partitions(); n <= before {
		t.Fatalf("%d partitions after the first cycle, %d before: want those ahead of day 5", n, before)
	}
}

// TestMaintenanceOrder runs one cycle over two tables with expiry and the
// retention sweep on, at days whose snapshots the expiry can age: per
// table the archival comes first, then expiry (only the archival's last
// snapshot is kept, holding the new W), then the status (which sees the
// new W); the tables one after the other, in their order; the sweep
// last.
func TestMaintenanceOrder(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	logs := newLogLines()
	log := slog.New(logs)
	reg, err := privacy.Open(ctx, e.pool, privacy.Options{Schema: "meterstore", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	s := e.open(t, Options{Tables: []Table{power(), gasDaily()}, Registry: reg, Logger: log,
		Snapshots: SnapshotRetention{MaxAge: time.Millisecond, KeepLast: 1}})
	// Days of the wall clock: expiry ages snapshots by the cycle's now,
	// and they are committed at the wall clock.
	now := time.Now().UTC().Add(time.Hour)
	first := int(now.Truncate(24*time.Hour).Sub(dayN(0)).Hours()/24) - 6
	if err := s.CreatePartitions(ctx, dayN(first), dayN(first+6)); err != nil {
		t.Fatal(err)
	}
	for d := first; d < first+4; d++ {
		mustWrite(t, s, []Reading{qh(1, d, 4, "A", 1, 1000)})
		if _, err := s.Write(ctx, "gas", []Reading{gasDay(1, d, 1, 100)}); err != nil {
			t.Fatal(err)
		}
	}
	out := s.Maintenance().ExpireSnapshots(true).AnonymiseAfter(privacy.CalendarYears(3), "§ 60 Abs. 6 MsbG", "test").Cycle(ctx, now)
	if !out.Healthy() {
		t.Fatalf("cycle: %+v %v", out.Unhealthy(), out.Failures())
	}
	for _, to := range out.Tables {
		if len(to.Archive.Windows) < 2 || to.Expired == nil || len(to.Expired.Expired) == 0 {
			t.Fatalf("%s: archived %d windows, expired %+v; want several windows, then their snapshots but the last expired", to.Table, len(to.Archive.Windows), to.Expired)
		}
		snaps, err := s.Snapshots(ctx, to.Table)
		if err != nil {
			t.Fatal(err)
		}
		if len(snaps) != 1 || !snaps[0].Watermark.Equal(to.Archive.Watermark) {
			t.Fatalf("%s: %d snapshots after the cycle (%+v); want the archival's last, holding W %v: expiry ran before it", to.Table, len(snaps), snaps, to.Archive.Watermark)
		}
		if !to.Status.HasWatermark || !to.Status.Watermark.Equal(to.Archive.Watermark) {
			t.Fatalf("%s: the cycle's status has W %v, the archival moved it to %v: the status was read before it", to.Table, to.Status.Watermark, to.Archive.Watermark)
		}
	}
	if out.Retention == nil || out.Retention.Err != nil {
		t.Fatalf("retention: %+v", out.Retention)
	}
	archived := func(table string) []int { return logs.index(table + ": archive: window archived") }
	expired := func(table string) []int { return logs.index(table + ": cold: snapshots expired") }
	sweep := logs.index(": privacy: retention sweep")
	pa, pe, ga, ge := archived("power"), expired("power"), archived("gas"), expired("gas")
	if len(pa) == 0 || len(pe) != 1 || len(ga) == 0 || len(ge) != 1 || len(sweep) != 1 {
		t.Fatalf("log lines: power archived %v, expired %v; gas archived %v, expired %v; sweep %v", pa, pe, ga, ge, sweep)
	}
	if order := []int{pa[0], slices.Max(pa), pe[0], ga[0], slices.Max(ga), ge[0], sweep[0]}; !slices.IsSorted(order) {
		t.Fatalf("the cycle's steps in the order %v (power archive first and last, power expiry, gas archive first and last, gas expiry, sweep); want ascending", order)
	}
}

// TestMaintenanceTablesOneAfterAnother holds a lock on the first table's
// parent that its partition creation waits for (no DDL lock timeout):
// while it waits, the second table's cycle has not begun, for half a
// second of the wait, and it runs once the lock is gone.
func TestMaintenanceTablesOneAfterAnother(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	s := e.open(t, Options{Tables: []Table{power(), gasDaily()}, Hot: HotOptions{DDLLockTimeout: NoLockTimeout}})
	m := s.Maintenance()
	if out := m.Cycle(ctx, dayN(0)); !out.Healthy() {
		t.Fatalf("first cycle: %v", out.Failures())
	}
	exists := func(rel string) bool {
		var ok bool
		if err := e.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, rel).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	day3 := dayN(3).Format("20060102")
	if exists("meterstore.power_p"+day3) || exists("meterstore.gas_p"+day3) {
		t.Fatal("fixture: day 3's partitions exist before the cycle of day 1")
	}
	holder, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(context.Background())
	if _, err := holder.Exec(ctx, `LOCK TABLE meterstore.power IN SHARE UPDATE EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	done := make(chan *MaintenanceOutcome, 1)
	go func() { done <- m.Cycle(ctx, dayN(1)) }()
	for waited := false; !waited; {
		if err := e.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE NOT granted AND relation = 'meterstore.power'::regclass
			AND clock_timestamp() - waitstart > interval '500 milliseconds')`).Scan(&waited); err != nil {
			t.Fatal(err)
		}
		select {
		case out := <-done:
			t.Fatalf("the cycle ended while power's lock was held: %+v", out.Tables)
		default:
		}
	}
	if exists("meterstore.gas_p" + day3) {
		t.Fatal("gas's cycle ran while power's was waiting: the tables were not visited one after another")
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	out := <-done
	if !out.Healthy() || !exists("meterstore.power_p"+day3) || !exists("meterstore.gas_p"+day3) {
		t.Fatalf("the cycle once the lock was gone: %v; day 3's partitions: power %v, gas %v",
			out.Failures(), exists("meterstore.power_p"+day3), exists("meterstore.gas_p"+day3))
	}
}

// TestMaintenanceBenignOutcomes runs cycles whose archival is deferred (a
// reader holds the parent, which a detach must wait for) and contended
// (another replica holds the lease): both are healthy, fail nothing, and
// the contended replica still reads the table's status.
func TestMaintenanceBenignOutcomes(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	a := e.open(t, Options{Hot: HotOptions{DDLLockTimeout: 200 * time.Millisecond}})
	b := e.open(t, Options{})
	for d := range 2 {
		mustWrite(t, a, []Reading{qh(1, d, 4, "A", 1, 1000)})
	}
	reader, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Rollback(context.Background())
	if _, err := reader.Exec(ctx, `SELECT count(*) FROM meterstore.power`); err != nil {
		t.Fatal(err)
	}
	out := a.Maintenance().Cycle(ctx, dayN(4))
	to := out.Tables[0]
	if to.Archive.Status != ArchiveDeferred || to.Err != nil || !to.Healthy() || !out.Healthy() || !to.Status.Healthy {
		t.Fatalf("a cycle whose detach was deferred: archive %+v, err %v, healthy %v/%v, status %+v; want deferred and healthy",
			to.Archive, to.Err, to.Healthy(), out.Healthy(), to.Status)
	}
	if err := reader.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	mp, reader2 := metricstest.New(t)
	c := e.open(t, Options{Meters: mp})
	err = b.arch.WithLease(ctx, "power", func(context.Context) error {
		out := c.Maintenance().Cycle(ctx, dayN(4))
		to := out.Tables[0]
		if to.Archive.Status != ArchiveLeaseContended || to.Err != nil || !to.Healthy() || !out.Healthy() {
			t.Errorf("a cycle whose lease was contended: archive %+v, err %v, healthy %v/%v; want contended and healthy",
				to.Archive, to.Err, to.Healthy(), out.Healthy())
		}
		if st := to.Status; st.Table != "power" || !st.Healthy || st.HotPartitions <= 0 || st.PartitionsAhead <= 0 || st.InvariantViolations != 0 {
			t.Errorf("the contended replica's status: %+v; want it read", st)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := metricstest.Value(t, reader2, "meterstore.table.healthy", tableIs("power")); n != 1 {
		t.Errorf("meterstore.table.healthy on the contended replica = %d, want 1", n)
	}
}

// TestStatusPartitionsUnknown: with PostgreSQL away the partitions cannot
// be listed, and the status says so (-1, unhealthy) rather than 0 or
// fine, in Status and in the partitions-ahead gauge.
func TestStatusPartitionsUnknown(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	mp, reader := metricstest.New(t)
	s := e.open(t, Options{Meters: mp})
	mustWrite(t, s, []Reading{qh(1, 0, 4, "A", 1, 1000)})
	if st := s.Status(ctx, dayN(0))[0]; st.PartitionsAhead <= 0 || !st.Healthy {
		t.Fatalf("fixture: status with PostgreSQL there: %+v", st)
	}
	restore := postgresAway(t, e)
	defer restore()
	st := s.Status(ctx, dayN(0))[0]
	if st.PartitionsAhead != -1 || st.HotPartitions != -1 || st.Healthy || st.Err == nil {
		t.Fatalf("status with PostgreSQL away: %+v; want partitions -1, unhealthy, with the cause", st)
	}
	if n := metricstest.Value(t, reader, "meterstore.table.partitions_ahead", tableIs("power")); n != -1 {
		t.Errorf("meterstore.table.partitions_ahead with PostgreSQL away = %d, want -1", n)
	}
}

package store

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/privacy"
	"github.com/meterstore/meterstore/series"
)

// gasDaily declares a second table, so that a cycle visits two.
func gasDaily() Table {
	return Table{
		Name: "gas", TimeModel: series.Interval, Commodity: metering.Gas,
		Resolutions: []metering.Resolution{metering.Day},
		Width:       series.Daily, Headroom: 2 * 24 * time.Hour,
	}
}

// TestMaintenanceMonths drives two months of simulated days through one
// cycle a day: every table archives its due window each day and stays
// healthy, and the outcome has one row per table.
func TestMaintenanceMonths(t *testing.T) {
	s := newEnv(t).open(t, Options{Tables: []Table{power(), gasDaily()}})
	m := s.Maintenance()
	const days = 60
	start := time.Now()
	compactions, settled := 0, 0
	for d := range days {
		now := dayN(d).Add(6 * time.Hour)
		out := m.Cycle(t.Context(), now)
		for _, to := range out.Tables {
			if c := to.Compacted; c != nil {
				compactions++
				// On by default: past 16 manifests or 8 small files in a
				// partition, or the day W leaves a month behind (the
				// month is settled), merged into one manifest.
				w := c.Watermark.UTC()
				month := time.Date(w.Year(), w.Month(), 1, 0, 0, 0, 0, time.UTC)
				crossed := c.ManifestsBefore > DefaultCompactManifestsOver || c.Rewritten > DefaultCompactSmallFilesOver
				if w.Sub(month) < 24*time.Hour {
					settled++
				} else if !crossed {
					t.Errorf("day %d: %s compacted %+v: want a threshold crossed or a month settled", d, to.Table, c)
				}
				if c.ManifestsAfter != 1 {
					t.Errorf("day %d: %s compacted %+v: want one manifest after", d, to.Table, c)
				}
			}
		}
		if len(out.Tables) != 2 || out.Tables[0].Table != "power" || out.Tables[1].Table != "gas" {
			t.Fatalf("day %d: outcome rows %+v", d, out.Tables)
		}
		if !out.Healthy() {
			t.Fatalf("day %d: unhealthy: %+v %v", d, out.Unhealthy(), out.Failures())
		}
		// Partitions are kept ahead, so a delivery for yesterday lands.
		if d > 0 {
			mustWrite(t, s, []Reading{qh(1, d-1, 10, "A", uint64(d), 1000)})
		}
		if out.Retention != nil {
			t.Fatalf("the retention sweep ran without being asked to")
		}
	}
	w, ok, err := s.cold.Watermark(t.Context(), s.tables[0].cold)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	// Day d's cycle at 06:00 archives the days ending at least the
	// settlement lag before it: the last cycle, on day 59, up to day 57.
	if want := dayN(days - 3); !w.Equal(want) {
		t.Errorf("W after %d days = %v, want %v", days, w, want)
	}
	if compactions == 0 || settled == 0 {
		t.Errorf("60 daily archivals compacted %d times, %d when a month was settled: want both", compactions, settled)
	}
	ice, err := s.cold.Iceberg(t.Context(), s.tables[0].cold)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := ice.FS(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ms, err := ice.CurrentSnapshot().Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) > DefaultCompactManifestsOver+1 {
		t.Errorf("%d manifests after %d days of maintenance, want at most %d", len(ms), days, DefaultCompactManifestsOver+1)
	}
	t.Logf("%d simulated days in %v, %d compactions, %d manifests at the end", days, time.Since(start).Round(time.Millisecond), compactions, len(ms))
}

// TestMaintenanceFailingTable: a table that fails does not end the cycle,
// the other is still maintained, and the failure names the table.
func TestMaintenanceFailingTable(t *testing.T) {
	ctx := t.Context()
	s := newEnv(t).open(t, Options{Tables: []Table{power(), gasDaily()}})
	// The power table loses its parent behind MeterStore's back.
	if _, err := s.opts.Pool.Exec(ctx, `DROP TABLE meterstore.power CASCADE`); err != nil {
		t.Fatal(err)
	}
	m := s.Maintenance()
	var out *MaintenanceOutcome
	for d := range 5 {
		out = m.Cycle(ctx, dayN(d))
	}
	f := out.Failures()
	if len(f) != 1 || f[0].Name != "power" {
		t.Fatalf("failures %+v, want power only", f)
	}
	if out.Healthy() || len(out.Unhealthy()) != 1 {
		t.Errorf("healthy %v, unhealthy %+v", out.Healthy(), out.Unhealthy())
	}
	gas := out.Tables[1]
	if gas.Err != nil || !gas.Healthy() || !gas.Archive.Watermark.Equal(dayN(2)) {
		t.Errorf("gas: %+v", gas)
	}
}

// TestMaintenanceRetention: the sweep runs only when asked, removes what
// is due, and a failed sweep is a failure named <retention>.
func TestMaintenanceRetention(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	reg, err := privacy.Open(ctx, e.pool, privacy.Options{Schema: "meterstore"})
	if err != nil {
		t.Fatal(err)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	old, err := reg.Register(ctx, "customer-1", time.Date(2022, 1, 2, 12, 0, 0, 0, berlin))
	if err != nil {
		t.Fatal(err)
	}
	young, err := reg.Register(ctx, "customer-2", time.Date(2025, 1, 2, 12, 0, 0, 0, berlin))
	if err != nil {
		t.Fatal(err)
	}
	s := e.open(t, Options{Registry: reg})
	m := s.Maintenance().AnonymiseAfter(privacy.CalendarYears(3), "§ 60 Abs. 6 MsbG", "test")
	out := m.Cycle(ctx, time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC))
	if out.Retention == nil || out.Retention.Err != nil || out.Retention.Removed != 1 {
		t.Fatalf("retention outcome %+v", out.Retention)
	}
	if _, _, ok, err := reg.Resolve(ctx, old); err != nil || ok {
		t.Errorf("collected 2022, due 31 Dec 2025: still resolvable (%v)", err)
	}
	if _, _, ok, err := reg.Resolve(ctx, young); err != nil || !ok {
		t.Errorf("collected 2025, due 31 Dec 2028: gone (%v)", err)
	}

	// Without a registry the sweep cannot run, and says so where alerts look.
	s2 := e.open(t, Options{})
	out = s2.Maintenance().AnonymiseAfter(privacy.CalendarYears(3), "§ 60 Abs. 6 MsbG", "test").Cycle(ctx, dayN(0))
	f := out.Failures()
	if len(f) != 1 || f[0].Name != RetentionName {
		t.Fatalf("failures %+v, want %s", f, RetentionName)
	}
}

// TestMaintenanceLoop runs the loop on a clock that advances a day per
// cycle; stopping it ends the loop after the cycle in flight.
func TestMaintenanceLoop(t *testing.T) {
	s := newStore(t)
	var day atomic.Int64
	clock := func() time.Time { return dayN(int(day.Add(1))) }
	h := s.Maintenance().Interval(time.Millisecond).Clock(clock).Start(t.Context())
	deadline := time.After(2 * time.Minute)
	for {
		last, n := h.Last()
		if n >= 20 {
			if !last.Healthy() {
				t.Fatalf("cycle %d unhealthy: %v", n, last.Failures())
			}
			break
		}
		select {
		case <-deadline:
			h.Stop()
			t.Fatalf("only %d cycles", n)
		case <-time.After(10 * time.Millisecond):
		}
	}
	h.Stop()
	select {
	case <-h.Done():
	default:
		t.Fatal("Stop returned before the loop ended")
	}
	_, n := h.Last()
	time.Sleep(20 * time.Millisecond)
	if _, m := h.Last(); m != n {
		t.Fatalf("cycles went on after Stop: %d then %d", n, m)
	}
	w, ok, err := s.cold.Watermark(t.Context(), s.tables[0].cold)
	if err != nil || !ok || w.Before(dayN(n-2)) {
		t.Errorf("W %v after %d cycles (%v)", w, n, err)
	}

	// Cancelling the context ends the loop too.
	ctx, cancel := context.WithCancel(t.Context())
	h = s.Maintenance().Interval(time.Hour).Clock(clock).Start(ctx)
	cancel()
	select {
	case <-h.Done():
	case <-time.After(time.Minute):
		t.Fatal("the loop did not end when its context was cancelled")
	}
	if last, n := h.Last(); n != 1 || last == nil {
		t.Errorf("the cycle in flight at cancellation: %d cycles recorded", n)
	}
}

// TestMaintenanceRefreshesSystemTables: a statement that names
// system.tables before any cycle computes it itself; a cycle leaves it as
// it found the tables, so a long-lived process's queries within
// SystemTablesMaxAge see its last cycle without computing it again.
func TestMaintenanceRefreshesSystemTables(t *testing.T) {
	// The wall clock stands at the cycle's now, so that a statement that
	// computes the system tables anew computes what the cycle did.
	now := dayN(0).Add(time.Hour)
	s := newEnv(t).open(t, Options{Now: NowOptions{WallClock: func() time.Time { return now }}})
	if res := mustQuery(t, s, `SELECT count(*) FROM system.tables`); res.Rows[0][0] != int64(1) {
		t.Fatalf("system.tables before any refresh or cycle: %v", res.Rows)
	}
	out := s.Maintenance().Cycle(t.Context(), now)
	res := mustQuery(t, s, `SELECT "table", hot_partitions, partitions_ahead, healthy FROM system.tables`)
	if len(res.Rows) != 1 {
		t.Fatalf("system.tables after a cycle: %v", res.Rows)
	}
	st := out.Tables[0].Status
	got := res.Rows[0]
	if got[0] != "power" || got[1] != st.HotPartitions || got[2] != st.PartitionsAhead || got[3] != st.Healthy || st.PartitionsAhead == 0 {
		t.Errorf("system.tables after a cycle: %v; the cycle's status %+v", got, st)
	}
}

// TestMaintenanceCreationDeferred holds a lock on the hot parent that
// conflicts with attaching a partition, as a VACUUM or an operator's
// LOCK TABLE does: the cycle's partition creation gives up within the lock
// timeout, and the cycle reports it deferred, with the table healthy and
// no failure. Once the lock is gone, the next cycle creates the partition.
func TestMaintenanceCreationDeferred(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	s := e.open(t, Options{Hot: HotOptions{DDLLockTimeout: 200 * time.Millisecond}})
	m := s.Maintenance()
	if out := m.Cycle(ctx, dayN(0)); !out.Healthy() || out.Tables[0].PartitionsDeferred {
		t.Fatalf("first cycle: %+v", out.Tables[0])
	}
	partition := func(d int) bool {
		var ok bool
		if err := e.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, "meterstore.power_p"+dayN(d).Format("20060102")).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !partition(2) || partition(3) {
		t.Fatal("fixture: the first cycle should create the partitions of days 0 to 2")
	}

	holder, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx)
	if _, err := holder.Exec(ctx, `LOCK TABLE meterstore.power IN SHARE UPDATE EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	out := m.Cycle(ctx, dayN(1))
	to := out.Tables[0]
	if !to.PartitionsDeferred || to.Err != nil || !to.Healthy() || !out.Healthy() {
		t.Fatalf("cycle under a held lock: deferred %v, healthy %v, err %v, status %+v",
			to.PartitionsDeferred, to.Healthy(), to.Err, to.Status)
	}
	if partition(3) {
		t.Fatal("the partition of day 3 was created under the held lock")
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	out = m.Cycle(ctx, dayN(1))
	if to := out.Tables[0]; to.PartitionsDeferred || !out.Healthy() || !partition(3) {
		t.Fatalf("cycle after the lock is gone: deferred %v, healthy %v, %v; partition of day 3: %v",
			to.PartitionsDeferred, out.Healthy(), out.Failures(), partition(3))
	}
}

// TestMaintenanceRetentionLease runs the cycle of two replicas of one
// deployment with the retention sweep on: while one holds the sweep's
// lease, the other's cycle reports the sweep contended, removes nothing
// and writes no audit row; the lease's winner sweeps and records it.
func TestMaintenanceRetentionLease(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	reg, err := privacy.Open(ctx, e.pool, privacy.Options{Schema: "meterstore"})
	if err != nil {
		t.Fatal(err)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	old, err := reg.Register(ctx, "customer-1", time.Date(2022, 1, 2, 12, 0, 0, 0, berlin))
	if err != nil {
		t.Fatal(err)
	}
	audits := func() int {
		var n int
		if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM meterstore.retention_log`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	now := time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)
	winner, contended := e.open(t, Options{Registry: reg}), e.open(t, Options{Registry: reg})
	sweep := func(s *Store) *MaintenanceOutcome {
		return s.Maintenance().AnonymiseAfter(privacy.CalendarYears(3), "§ 60 Abs. 6 MsbG", "test").Cycle(ctx, now)
	}
	err = winner.arch.WithLease(ctx, RetentionName, func(context.Context) error {
		out := sweep(contended)
		if r := out.Retention; r == nil || !r.LeaseContended || r.Removed != 0 || r.Err != nil || !out.Healthy() {
			t.Errorf("the contended replica's sweep: %+v, healthy %v; want lease contended, nothing removed, no failure", r, out.Healthy())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := audits(); n != 0 {
		t.Fatalf("%d audit rows after the contended replica's cycle, want 0", n)
	}
	if _, _, ok, err := reg.Resolve(ctx, old); err != nil || !ok {
		t.Fatalf("the contended replica swept: resolvable %v (%v)", ok, err)
	}
	out := sweep(winner)
	if r := out.Retention; r == nil || r.LeaseContended || r.Removed != 1 || r.Err != nil {
		t.Fatalf("the winner's sweep: %+v", r)
	}
	if n := audits(); n != 1 {
		t.Fatalf("%d audit rows after the winner's cycle, want 1", n)
	}
}

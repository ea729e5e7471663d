package store

import (
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icetable "github.com/apache/iceberg-go/table"

	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/series"
)

// compactDays writes days of readings (two meters, both channels) and
// archives each with its own cycle, compaction off, with a late correction
// below W after every cycle: many small files and manifests.
func compactDays(t *testing.T, s *Store, o *oracle, rng *rand.Rand, days int) {
	t.Helper()
	m := s.Maintenance().Compact(false, CompactOptions{})
	if _, err := s.hot.CreatePartitions(t.Context(), s.tables[0].decl, dayN(0), dayN(days+4)); err != nil {
		t.Fatal(err)
	}
	version := uint64(1000)
	for d := range days {
		var batch []Reading
		for i := range 2 {
			for _, ch := range []string{"A", "B"} {
				for slot := range 96 {
					batch = append(batch, qh(i, d, slot, ch, version, rng.Int64N(5_000_000)))
				}
			}
		}
		mustWrite(t, s, batch)
		o.ack(batch)
		out := m.Cycle(t.Context(), dayN(d+3).Add(time.Hour))
		if f := out.Failures(); len(f) > 0 {
			t.Fatalf("day %d: %v", d, f[0].Err)
		}
		if d > 0 {
			version++
			fix := []Reading{qh(rng.IntN(2), rng.IntN(d), rng.IntN(96), "A", version, rng.Int64N(5_000_000))}
			mustWrite(t, s, fix)
			o.ack(fix)
		}
	}
}

// versionsDiff returns how readings_versions and readings differ from
// the oracle over all time, "" if they do not.
func versionsDiff(t *testing.T, s *Store, o *oracle) string {
	t.Helper()
	cols := `SELECT malo_id, channel, epoch_us("from"), CAST(version AS VARCHAR), CAST(value AS VARCHAR) FROM `
	for rel, want := range map[string][]string{
		"readings_versions": o.versions(time.Time{}, time.Time{}),
		"readings":          o.resolved(time.Time{}, time.Time{}),
	} {
		if got := lines(mustQuery(t, s, cols+rel)); !slices.Equal(got, want) {
			return rel + ": " + firstDiff(got, want)
		}
	}
	return ""
}

// TestCompactOracle compacts a table while late corrections below W and
// an archival run at the same time, each retried when it loses: nothing
// acknowledged is lost or doubled, W is unchanged by the compaction, and
// files and manifests shrink. A compaction that drops a file is caught by
// the same oracle.
func TestCompactOracle(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	rng := rand.New(rand.NewPCG(11, uint64(time.Now().UnixNano())))
	o := &oracle{rows: map[oracleKey]int64{}}
	const days = 8
	compactDays(t, s, o, rng, days)
	if d := versionsDiff(t, s, o); d != "" {
		t.Fatalf("before compaction: %s", d)
	}
	ct := s.tables[0].cold

	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		conflicts int
		held      int
		done      Compaction
		errs      []error
	)
	fail := func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }
	wg.Add(3)
	go func() { // compaction, retried while it is overtaken
		defer wg.Done()
		for range 500 {
			c, err := s.Compact(ctx, "power", CompactOptions{})
			switch {
			case errors.Is(err, ErrCompactionConflict):
				mu.Lock()
				conflicts++
				mu.Unlock()
				// Give the archival a turn at the lease.
				time.Sleep(20 * time.Millisecond)
				continue
			case errors.Is(err, ErrLeaseHeld):
				mu.Lock()
				held++
				mu.Unlock()
				time.Sleep(10 * time.Millisecond)
				continue
			case err != nil:
				fail(err)
			}
			mu.Lock()
			done = c
			mu.Unlock()
			return
		}
		fail(errors.New("compaction did not land in 500 attempts"))
	}()
	version := uint64(5000)
	var acked [][]Reading
	go func() { // late corrections below W, retried when they lose
		defer wg.Done()
		for k := range 6 {
			fix := []Reading{qh(k%2, k%(days-2), 10+k, "B", version+uint64(k), int64(k)*7)}
			var err error
			for range 20 {
				if _, err = s.Write(ctx, "power", fix); err == nil || !(errors.Is(err, icetable.ErrCommitFailed) || series.IsRetryable(err)) {
					break
				}
			}
			if err != nil {
				fail(err)
				return
			}
			mu.Lock()
			acked = append(acked, fix)
			mu.Unlock()
		}
	}()
	go func() { // the next day's archival, retried while the lease is held
		defer wg.Done()
		// Bounded by time, not attempts: a compaction that keeps losing
		// to the corrections keeps taking the lease.
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); {
			out, err := s.Archive(ctx, "power", dayN(days+3).Add(time.Hour))
			if err != nil {
				fail(err)
				return
			}
			if out.Status == ArchiveArchived {
				return
			}
			if out.Status != ArchiveLeaseContended {
				fail(errors.New("archival: " + out.Status.String()))
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		fail(errors.New("archival never won the lease"))
	}()
	wg.Wait()
	if len(errs) > 0 {
		t.Fatal(errors.Join(errs...))
	}
	for _, a := range acked {
		o.ack(a)
	}
	t.Logf("compaction %+v after %d lost races and %d held leases", done, conflicts, held)
	if done.SnapshotID == 0 || done.Rewritten == 0 || done.FilesAfter >= done.FilesBefore || done.ManifestsAfter >= done.ManifestsBefore {
		t.Fatalf("compaction %+v: want fewer files and manifests", done)
	}
	if d := versionsDiff(t, s, o); d != "" {
		t.Fatalf("after compaction: %s", d)
	}
	w, _, err := s.cold.Watermark(ctx, ct)
	if err != nil || !w.Equal(dayN(days+1)) {
		t.Fatalf("W %v (%v), want %v", w, err, dayN(days+1))
	}

	// A broken compaction, which drops one data file and keeps W, is
	// caught by the oracle.
	ice, err := s.cold.Iceberg(ctx, ct)
	if err != nil {
		t.Fatal(err)
	}
	scan := ice.Scan()
	tasks, err := scan.PlanFiles(ctx)
	scan.Close()
	if err != nil || len(tasks) == 0 {
		t.Fatal(len(tasks), err)
	}
	tx := ice.NewTransaction()
	if err := tx.ReplaceDataFilesWithDataFiles(ctx, []iceberg.DataFile{tasks[0].File}, nil,
		iceberg.Properties{cold.SummaryWatermark: cold.FormatTime(w)}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if d := versionsDiff(t, s, o); d == "" {
		t.Fatal("the oracle did not catch a compaction that dropped a data file")
	} else {
		t.Logf("broken compaction caught: %s", d)
	}
}

// TestMaintenanceForCompaction: the configuration's maintenance.compact
// keys reach the loop, and compact = false turns compaction off.
func TestMaintenanceForCompaction(t *testing.T) {
	cfg := config.Default()
	if m := (&Store{}).MaintenanceFor(cfg); m.compact == nil || m.compact.ManifestsOver != 16 || m.compact.SmallFilesOver != 8 {
		t.Errorf("the template's compaction: %+v, want thresholds 16 and 8", m.compact)
	}
	cfg.Maintenance.CompactManifests, cfg.Maintenance.CompactSmallFiles = 3, 5
	if m := (&Store{}).MaintenanceFor(cfg); m.compact == nil || m.compact.ManifestsOver != 3 || m.compact.SmallFilesOver != 5 {
		t.Errorf("compaction at 3 manifests or 5 small files: %+v", m.compact)
	}
	cfg.Maintenance.Compact = false
	if m := (&Store{}).MaintenanceFor(cfg); m.compact != nil {
		t.Errorf("compact = false: %+v, want off", m.compact)
	}
}

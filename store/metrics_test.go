package store

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icetable "github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/consensus/postgres"
	"github.com/meterstore/meterstore/internal/metrics"
	"github.com/meterstore/meterstore/internal/metrics/metricstest"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/privacy"
	"github.com/meterstore/meterstore/series"
)

func tableIs(name string) attribute.KeyValue { return attribute.String(metrics.AttrTable, name) }

// TestMetricsLogMismatch makes another replica commit to the table between
// an archival's read of the log's head and its compare-and-set, five times,
// on each backend of the log: the mismatch counter moves by exactly the
// five races lost, under the table and the backend. An archival commits a
// window again when it loses a race, up to four times: the first cycle
// loses all four and fails as a conflict, the second loses one and
// commits.
func TestMetricsLogMismatch(t *testing.T) {
	for _, log := range []string{LogPostgres, LogObjectStore} {
		t.Run(log, func(t *testing.T) {
			ctx := t.Context()
			url := pgtest.NewDB(t)
			pcfg, err := pgxpool.ParseConfig(url)
			if err != nil {
				t.Fatal(err)
			}
			pool, err := pgxpool.NewWithConfig(ctx, pcfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pool.Close)
			wh, err := catalog.OpenWarehouse(ctx, "file://"+t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { wh.Bucket.Close() })
			opts := CatalogOptions{Log: log, Warehouse: wh, Postgres: pcfg, LogOptions: postgres.Options{Schema: "meterstore"}}
			// The other replica: the same log and warehouse, unmetered.
			other, closeOther, err := OpenCatalog(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(closeOther)

			var armed, raced, rollups atomic.Int32
			opts.beforeCommit = func(ident icetable.Identifier) {
				if len(ident) == 2 && strings.HasSuffix(ident[0], "_daily") {
					rollups.Add(1) // the daily rollup's commits, after the archival's
					return
				}
				if armed.Add(-1) < 0 {
					armed.Store(0)
					return
				}
				tbl, err := other.LoadTable(ctx, ident)
				if err != nil {
					t.Error(err)
					return
				}
				tx := tbl.NewTransaction()
				if err := tx.SetProperties(iceberg.Properties{"test.race": strconv.Itoa(int(raced.Load()))}); err != nil {
					t.Error(err)
					return
				}
				if _, err := tx.Commit(ctx); err != nil {
					t.Errorf("the other replica's commit: %v", err)
					return
				}
				raced.Add(1)
			}
			mp, reader := metricstest.New(t)
			opts.Meters = mp
			cat, closeCat, err := OpenCatalog(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(closeCat)
			e := &testEnv{pool: pool, cat: cat}
			s := e.open(t, Options{Meters: mp})

			backend := attribute.String(metrics.AttrBackend, log)
			mismatch := attribute.String(metrics.AttrOutcome, metrics.CASMismatch)
			committed := attribute.String(metrics.AttrOutcome, metrics.CASCommitted)
			if n := metricstest.Value(t, reader, "meterstore.log.cas.duration", backend, committed); n == 0 {
				t.Fatal("opening the store created a table, and no committed compare-and-set was recorded")
			}
			if n := metricstest.Value(t, reader, "meterstore.log.cas.mismatches"); n != 0 {
				t.Fatalf("%d mismatches before any race", n)
			}
			if err := s.CreatePartitions(ctx, dayN(0), dayN(4)); err != nil {
				t.Fatal(err)
			}
			mustWrite(t, s, []Reading{qh(1, 0, 3, "A", 1, 1000), qh(1, 1, 3, "A", 1, 1000)})
			// A first archival creates the daily rollup's table, whose
			// creation commits on logs of its own.
			if out, err := s.Archive(ctx, "power", dayN(3)); err != nil || out.Status != ArchiveArchived {
				t.Fatalf("first archival: %+v, %v", out, err)
			}
			rollups.Store(0)
			commitsBefore := metricstest.Value(t, reader, "meterstore.log.cas.duration", backend, committed)

			const races = 5
			armed.Store(races)
			failed := 0
			for range 5 {
				out, err := s.Archive(ctx, "power", dayN(4))
				if err == nil && out.Status == ArchiveArchived {
					break
				}
				if !errors.Is(err, ErrCommitConflict) {
					t.Fatalf("archival that lost a race: %+v, %v; want a commit conflict", out, err)
				}
				failed++
			}
			if raced.Load() != races || failed != 1 {
				t.Fatalf("the other replica committed %d times, %d archivals failed; want %d and 1", raced.Load(), failed, races)
			}
			if n := metricstest.Value(t, reader, "meterstore.log.cas.mismatches", backend, tableIs("power")); n != races {
				t.Errorf("meterstore.log.cas.mismatches{table=power} = %d, want the %d races lost", n, races)
			}
			if n := metricstest.Value(t, reader, "meterstore.log.cas.mismatches"); n != races {
				t.Errorf("meterstore.log.cas.mismatches = %d over every attribute, want %d", n, races)
			}
			if n := metricstest.Value(t, reader, "meterstore.log.cas.duration", backend, mismatch); n != races {
				t.Errorf("meterstore.log.cas.duration{outcome=mismatch} counts %d, want %d", n, races)
			}
			if n := metricstest.Value(t, reader, "meterstore.log.cas.duration", backend, committed) - commitsBefore; n != 1+int64(rollups.Load()) {
				t.Errorf("meterstore.log.cas.duration{outcome=committed} grew by %d, want the 1 archival commit and the rollup's %d", n, rollups.Load())
			}
			conflict := attribute.String(metrics.AttrReason, metrics.FailureConflict)
			if n := metricstest.Value(t, reader, "meterstore.archival.failures", tableIs("power"), conflict); n != 1 {
				t.Errorf("meterstore.archival.failures{reason=conflict} = %d, want 1", n)
			}
			if n := metricstest.Value(t, reader, "meterstore.archival.rows", tableIs("power")); n != 2 {
				t.Errorf("meterstore.archival.rows = %d, want 2, a reading an archival", n)
			}
		})
	}
}

// TestMetricsQuarantine: a table whose declaration its cold schema cannot
// take fails its archival as a quarantine and reads unhealthy; the other
// table reads healthy.
func TestMetricsQuarantine(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	other := power()
	other.Name = "other"
	s1 := e.open(t, Options{Tables: []Table{withColumns(series.Column{Name: "note"}), other}})
	mustWrite(t, s1, []Reading{qh(1, 0, 1, "A", 1, 1000), qh(1, 3, 1, "A", 1, 1000)})
	if _, err := s1.Archive(ctx, "power", dayN(3)); err != nil {
		t.Fatal(err)
	}
	mp, reader := metricstest.New(t)
	s := e.open(t, Options{Meters: mp, Tables: []Table{withColumns(series.Column{Name: "note", Type: series.BigInt}), other}})
	for range 3 {
		if out, _ := s.Archive(ctx, "power", dayN(5)); out.Status != ArchiveQuarantined {
			t.Fatalf("archival of the quarantined table: %+v", out)
		}
	}
	if _, err := s.Archive(ctx, "other", dayN(5)); err != nil {
		t.Fatal(err)
	}
	quarantine := attribute.String(metrics.AttrReason, metrics.FailureQuarantine)
	if n := metricstest.Value(t, reader, "meterstore.archival.failures", tableIs("power"), quarantine); n != 3 {
		t.Errorf("meterstore.archival.failures{table=power,reason=quarantine} = %d, want 3", n)
	}
	if n := metricstest.Value(t, reader, "meterstore.archival.failures"); n != 3 {
		t.Errorf("meterstore.archival.failures = %d over every table and reason, want 3", n)
	}
	s.Status(ctx, dayN(5))
	if h, o := gaugeValue(t, reader, "meterstore.table.healthy"), metricstest.Value(t, reader, "meterstore.table.healthy", tableIs("other")); h != 0 || o != 1 {
		t.Errorf("meterstore.table.healthy: power %d, other %d; want 0 and 1", h, o)
	}
}

// TestMetricsPartitionsDropped: the partitions the archival cycles drop
// are counted, as many as their outcomes report.
func TestMetricsPartitionsDropped(t *testing.T) {
	ctx := t.Context()
	mp, reader := metricstest.New(t)
	s := newEnv(t).open(t, Options{Meters: mp})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(10)); err != nil {
		t.Fatal(err)
	}
	for d := range 6 {
		mustWrite(t, s, []Reading{qh(1, d, 4, "A", 1, int64(1000+d))})
	}
	var dropped int64
	for now := 4; now <= 10; now++ {
		out, err := s.Archive(ctx, "power", dayN(now))
		if err != nil {
			t.Fatal(err)
		}
		dropped += int64(len(out.Dropped))
	}
	if dropped < 5 {
		t.Fatalf("fixture: the cycles dropped %d partitions, want the 5 archived at least", dropped)
	}
	if n := metricstest.Value(t, reader, "meterstore.archival.partitions_dropped", tableIs("power")); n != dropped {
		t.Errorf("meterstore.archival.partitions_dropped = %d, want %d", n, dropped)
	}
}

// TestMetricsCompaction: a compaction that commits counts a run and the
// files and bytes it replaced and wrote, as its report says; one with
// nothing left to do counts a skipped run and nothing else.
func TestMetricsCompaction(t *testing.T) {
	ctx := t.Context()
	mp, reader := metricstest.New(t)
	s := newEnv(t).open(t, Options{Meters: mp})
	compactDays(t, s, &oracle{rows: map[oracleKey]int64{}}, rand.New(rand.NewPCG(3, 4)), 4)
	c, err := s.Compact(ctx, "power", CompactOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.SnapshotID == 0 || c.Rewritten == 0 || c.BytesRead == 0 || c.Written == 0 || c.BytesWritten == 0 {
		t.Fatalf("fixture: compaction %+v rewrote nothing", c)
	}
	outcome := func(o string) attribute.KeyValue { return attribute.String(metrics.AttrOutcome, o) }
	for _, x := range []struct {
		name string
		want int64
	}{
		{"meterstore.compaction.rewritten_files", int64(c.Rewritten)},
		{"meterstore.compaction.rewritten_bytes", c.BytesRead},
		{"meterstore.compaction.written_files", int64(c.Written)},
		{"meterstore.compaction.written_bytes", c.BytesWritten},
	} {
		if n := metricstest.Value(t, reader, x.name, tableIs("power")); n != x.want {
			t.Errorf("%s = %d, want %d", x.name, n, x.want)
		}
	}
	if n := metricstest.Value(t, reader, "meterstore.compaction.runs", tableIs("power"), outcome(metrics.CompactionCompacted)); n != 1 {
		t.Errorf("meterstore.compaction.runs{outcome=compacted} = %d, want 1", n)
	}
	again, err := s.Compact(ctx, "power", CompactOptions{})
	if err != nil || again.SnapshotID != 0 {
		t.Fatalf("a second compaction: %+v, %v; want nothing to do", again, err)
	}
	if n := metricstest.Value(t, reader, "meterstore.compaction.runs", tableIs("power"), outcome(metrics.CompactionSkipped)); n != 1 {
		t.Errorf("meterstore.compaction.runs{outcome=skipped} = %d, want 1", n)
	}
	if n := metricstest.Value(t, reader, "meterstore.compaction.rewritten_files"); n != int64(c.Rewritten) {
		t.Errorf("meterstore.compaction.rewritten_files = %d after a skipped run, want %d", n, c.Rewritten)
	}
}

// TestMetricsOrphans plants two orphan files of known sizes: a dry run
// shows them found and removes nothing, a run that deletes counts them and
// their bytes removed, and a run after that finds none.
func TestMetricsOrphans(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	mp, reader := metricstest.New(t)
	wall := time.Now().Add(48 * time.Hour)
	s := e.open(t, Options{Meters: mp, Now: NowOptions{WallClock: func() time.Time { return wall }}})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(6)); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, []Reading{qh(1, 0, 4, "A", 1, 1000)})
	if _, err := s.Archive(ctx, "power", dayN(4)); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(e.dir, "meterstore", "power", "data")
	sizes := []int{1234, 567}
	for _, n := range sizes {
		if err := os.WriteFile(filepath.Join(dir, "00000-0-"+uuid.NewString()+".parquet"), make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const files, bytes = 2, 1234 + 567
	values := func() [4]int64 {
		return [4]int64{
			metricstest.Value(t, reader, "meterstore.orphans.found_files", tableIs("power")),
			metricstest.Value(t, reader, "meterstore.orphans.found_bytes", tableIs("power")),
			metricstest.Value(t, reader, "meterstore.orphans.removed_files", tableIs("power")),
			metricstest.Value(t, reader, "meterstore.orphans.removed_bytes", tableIs("power")),
		}
	}
	if _, err := s.Orphans(ctx, "power", OrphanOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, want := values(), [4]int64{files, bytes, 0, 0}; got != want {
		t.Errorf("after a dry run: found, found bytes, removed, removed bytes = %v, want %v", got, want)
	}
	if r, err := s.Orphans(ctx, "power", OrphanOptions{Delete: true}); err != nil || r.Deleted != files {
		t.Fatalf("delete: %+v, %v", r, err)
	}
	if got, want := values(), [4]int64{files, bytes, files, bytes}; got != want {
		t.Errorf("after deleting: %v, want %v", got, want)
	}
	if _, err := s.Orphans(ctx, "power", OrphanOptions{Delete: true}); err != nil {
		t.Fatal(err)
	}
	if got, want := values(), [4]int64{0, 0, files, bytes}; got != want {
		t.Errorf("after a run that found none: %v, want %v", got, want)
	}
}

// TestMetricsRetentionFailure: a retention sweep that cannot run (no
// subject registry) is counted as failed in every cycle.
func TestMetricsRetentionFailure(t *testing.T) {
	ctx := t.Context()
	mp, reader := metricstest.New(t)
	s := newEnv(t).open(t, Options{Meters: mp})
	m := s.Maintenance().AnonymiseAfter(privacy.CalendarYears(3), "§ 60 Abs. 6 MsbG", "test")
	for range 2 {
		if out := m.Cycle(ctx, dayN(1)); out.Retention == nil || out.Retention.Err == nil {
			t.Fatalf("a sweep without a registry: %+v", out.Retention)
		}
	}
	if n := metricstest.Value(t, reader, "meterstore.retention.failures"); n != 2 {
		t.Errorf("meterstore.retention.failures = %d, want 2", n)
	}
}

package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/internal/pgtest"
)

// systemTables returns system.tables as refreshed at now, one map per row.
func systemTables(t *testing.T, s *Store, now time.Time) []map[string]any {
	t.Helper()
	if err := s.RefreshSystemTables(t.Context(), now); err != nil && !strings.Contains(err.Error(), "snapshots") {
		t.Fatal(err)
	}
	res := mustQuery(t, s, `SELECT "table", watermark, watermark_lag_seconds, hot_partitions, partitions_ahead, invariant_violations, healthy, watermark_source, error FROM system.tables ORDER BY "table"`)
	var out []map[string]any
	for _, r := range res.Rows {
		m := map[string]any{}
		for i, c := range res.Columns {
			m[c] = r[i]
		}
		out = append(out, m)
	}
	return out
}

func wantRow(t *testing.T, what string, row map[string]any, want map[string]any) {
	t.Helper()
	for k, v := range want {
		if row[k] != v {
			t.Errorf("%s: %s = %v (%T), want %v (%T)", what, k, row[k], row[k], v, v)
		}
	}
}

// TestSystemTablesHealth builds each state system.tables distinguishes:
// not started, healthy, exhausted, an invariant violation, and a watermark
// that cannot be read.
func TestSystemTablesHealth(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	wall := time.Now()
	s := e.open(t, Options{Now: NowOptions{WallClock: func() time.Time { return wall }}})
	pw := s.tables[0].decl

	// Not started: no partition at all is exempt, not exhausted.
	rows := systemTables(t, s, dayN(0))
	wantRow(t, "not started", rows[0], map[string]any{"table": "power", "hot_partitions": int64(0),
		"partitions_ahead": int64(0), "invariant_violations": int64(0), "healthy": true, "watermark": nil})

	// Healthy, with partitions ahead of now.
	if _, err := s.hot.CreatePartitions(ctx, pw, dayN(0), dayN(5)); err != nil {
		t.Fatal(err)
	}
	rows = systemTables(t, s, dayN(1).Add(time.Hour))
	wantRow(t, "healthy", rows[0], map[string]any{"hot_partitions": int64(6), "partitions_ahead": int64(5), "healthy": true})

	// Within SystemTablesMaxAge of the last refresh by the wall clock, a
	// query sees it, whatever happened since; past it, a query that names
	// the system tables computes them anew at the wall clock.
	if _, err := s.hot.CreatePartitions(ctx, pw, dayN(6), dayN(6)); err != nil {
		t.Fatal(err)
	}
	res := mustQuery(t, s, `SELECT hot_partitions FROM system.tables`)
	if res.Rows[0][0] != int64(6) {
		t.Errorf("system.tables changed within its age: %v", res.Rows[0][0])
	}
	wall = wall.Add(DefaultSystemTablesMaxAge)
	res = mustQuery(t, s, `SELECT hot_partitions FROM system.tables`)
	if res.Rows[0][0] != int64(7) {
		t.Errorf("system.tables past its age: %v; want it computed anew", res.Rows[0][0])
	}

	// Exhausted: partitions exist and none is ahead of now.
	rows = systemTables(t, s, dayN(30))
	wantRow(t, "exhausted", rows[0], map[string]any{"partitions_ahead": int64(0), "healthy": false})

	// Archive days 0 and 1; W moves to day 2.
	mustWrite(t, s, []Reading{qh(1, 0, 3, "A", 1, 1000), qh(1, 1, 3, "A", 1, 1000), qh(1, 4, 3, "A", 1, 1000)})
	if out, err := s.Archive(ctx, "power", dayN(4)); err != nil || len(out.Windows) != 2 {
		t.Fatalf("archive: %v, %+v", err, out)
	}
	rows = systemTables(t, s, dayN(4))
	wantRow(t, "archived", rows[0], map[string]any{"watermark": dayN(2), "watermark_lag_seconds": int64(2 * 86400),
		"invariant_violations": int64(0), "healthy": true, "watermark_source": "catalog"})

	// A row below W in PostgreSQL: the archived partition of day 0,
	// detached and kept for the reader grace, attached again behind
	// MeterStore's back.
	bound := func(at time.Time) string {
		return pgtest.PartitionBound(t, ctx, e.pool, "meterstore.power", 15*time.Minute, at)
	}
	if _, err := e.pool.Exec(ctx, `ALTER TABLE meterstore.power ATTACH PARTITION meterstore.power_p20260302
		FOR VALUES FROM (`+bound(dayN(0))+`) TO (`+bound(dayN(1))+`)`); err != nil {
		t.Fatal(err)
	}
	rows = systemTables(t, s, dayN(4))
	wantRow(t, "violated", rows[0], map[string]any{"invariant_violations": int64(1), "healthy": false})

	// A cold tier whose metadata cannot be read: the watermark is the one
	// the archival ledger recorded, which writes are routed by meanwhile,
	// marked as such; the hot tier is still counted below it; unhealthy,
	// never fine.
	meta := filepath.Join(e.dir, "meterstore", "power", "metadata")
	if err := os.Rename(meta, meta+".gone"); err != nil {
		t.Fatal(err)
	}
	rows = systemTables(t, s, dayN(4))
	wantRow(t, "unreadable", rows[0], map[string]any{"invariant_violations": int64(1), "healthy": false,
		"watermark": dayN(2), "watermark_source": "ledger"})
	if msg, _ := rows[0]["error"].(string); !strings.Contains(msg, "cold tier is unreachable") {
		t.Errorf("unreadable: error %q does not name the cold tier", msg)
	}
}

// TestSystemConfigResolutionSnapshots checks the three other relations
// against a state built for them.
func TestSystemConfigResolutionSnapshots(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	pw := s.tables[0].decl
	if _, err := s.hot.CreatePartitions(ctx, pw, dayN(0), dayN(5)); err != nil {
		t.Fatal(err)
	}
	for d := range 3 {
		mustWrite(t, s, []Reading{qh(1, d, 1, "A", 1, 1000), qh(1, d, 1, "A", 2, 1500), qh(1, d, 1, "B", 1, 300)})
	}
	for d := 3; d <= 4; d++ {
		if _, err := s.Archive(ctx, "power", dayN(d)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RefreshSystemTables(ctx, dayN(5)); err != nil {
		t.Fatal(err)
	}

	res := mustQuery(t, s, `SELECT settlement_lag, archival_step, partition_width, headroom, consistent FROM system.config WHERE "table" = 'power'`)
	if got := res.Rows[0]; got[0] != "2d" || got[1] != "1d" || got[2] != "daily" || got[3] != "2d" || got[4] != true {
		t.Errorf("system.config: %v", got)
	}

	// The resolution SQL, pasted over every version, gives what readings
	// gives: the rule a foreign engine needs, spelled so it can be used.
	res = mustQuery(t, s, `SELECT value FROM system.resolution WHERE setting = 'resolution_sql' AND dialect = 'duckdb'`)
	rsql := res.Rows[0][0].(string)
	pasted := strings.ReplaceAll(rsql, `FROM "power"`, "FROM readings_versions")
	a := mustQuery(t, s, `SELECT malo_id, channel, "from", CAST(value AS VARCHAR) FROM (`+pasted+`) ORDER BY ALL`)
	b := mustQuery(t, s, `SELECT malo_id, channel, "from", CAST(value AS VARCHAR) FROM readings ORDER BY ALL`)
	if len(a.Rows) != 6 || len(a.Rows) != len(b.Rows) {
		t.Fatalf("resolution SQL gave %d rows, readings %d, want 6", len(a.Rows), len(b.Rows))
	}
	for i := range a.Rows {
		for j := range a.Rows[i] {
			if a.Rows[i][j] != b.Rows[i][j] {
				t.Fatalf("row %d: resolution SQL %v, readings %v", i, a.Rows[i], b.Rows[i])
			}
		}
	}
	res = mustQuery(t, s, `SELECT value FROM system.resolution WHERE setting = 'balancing_day_column'`)
	if res.Rows[0][0] != "balancing_day" {
		t.Errorf("balancing_day_column = %v", res.Rows[0][0])
	}

	snaps, err := s.Snapshots(ctx, "power")
	if err != nil {
		t.Fatal(err)
	}
	res = mustQuery(t, s, `SELECT snapshot_id, watermark FROM system.snapshots ORDER BY committed_at, snapshot_id`)
	if len(res.Rows) != len(snaps) || len(snaps) < 2 {
		t.Fatalf("system.snapshots has %d rows, the table %d snapshots", len(res.Rows), len(snaps))
	}
	last := res.Rows[len(res.Rows)-1]
	if last[1] != dayN(2) {
		t.Errorf("watermark of the newest snapshot: %v, want %v", last[1], dayN(2))
	}
	var prev time.Time
	for _, r := range res.Rows {
		if w, ok := r[1].(time.Time); ok {
			if w.Before(prev) {
				t.Errorf("watermark moved backwards: %v after %v", w, prev)
			}
			prev = w
		}
	}
}

// TestSystemTablesMaxAge: a statement that names the system tables
// computes them anew only once they are older than the setting, by the
// wall clock the store is given.
func TestSystemTablesMaxAge(t *testing.T) {
	ctx := t.Context()
	wall := time.Now()
	s := newEnv(t).open(t, Options{Now: NowOptions{WallClock: func() time.Time { return wall }},
		Query: QueryOptions{CacheDir: t.TempDir(), SystemTablesMaxAge: time.Minute}})
	pw := s.tables[0].decl
	parts := func() any { return mustQuery(t, s, `SELECT hot_partitions FROM system.tables`).Rows[0][0] }
	if got := parts(); got != int64(0) {
		t.Fatalf("fixture: %v partitions", got)
	}
	if _, err := s.hot.CreatePartitions(ctx, pw, dayN(0), dayN(2)); err != nil {
		t.Fatal(err)
	}
	wall = wall.Add(59 * time.Second)
	if got := parts(); got != int64(0) {
		t.Errorf("system.tables computed anew within its age of a minute: %v partitions", got)
	}
	wall = wall.Add(time.Second)
	if got := parts(); got != int64(3) {
		t.Errorf("system.tables a minute old: %v partitions; want it computed anew", got)
	}
}

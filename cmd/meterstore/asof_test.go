package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/store"
)

// newDeployment writes the configuration template pointed at a fresh test
// database and a warehouse in a temporary directory, creates the tables,
// and returns the flags naming the configuration.
func newDeployment(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "meterstore.toml")
	mustRun(t, "init", cfgPath)
	tmpl, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(tmpl), `url = ""`, fmt.Sprintf("url = %q", pgtest.NewDB(t)), 1)
	text = strings.Replace(text, `data_dir = "meterstore-data"`, fmt.Sprintf("data_dir = %q", dir), 1)
	text = strings.Replace(text, `url = "file://meterstore-data/warehouse"`, fmt.Sprintf("url = %q", "file://"+filepath.Join(dir, "wh")), 1)
	if err := os.WriteFile(cfgPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c := []string{"-c", cfgPath}
	mustRun(t, append([]string{"create", "--now", "2026-03-01T00:00:00Z"}, c...)...)
	return c
}

// TestQueryAsOf: a day archived, then corrected late below W; meterstore
// query as of the archival's snapshot (by id and by time) and as known at
// a time between them shows the day as it was archived, the plain query
// the correction.
func TestQueryAsOf(t *testing.T) {
	c := newDeployment(t)
	dir := t.TempDir()
	day := filepath.Join(dir, "day.csv")
	os.WriteFile(day, []byte(deliveryCSV(2, -1)), 0o644)
	mustRun(t, append([]string{"ingest", "--table", "power", day}, c...)...)
	mustRun(t, append([]string{"archive", "--now", "2026-05-01T00:00:00Z"}, c...)...)
	query := func(sql string, flags ...string) (string, int) {
		t.Helper()
		args := append([]string{"query", "--table", "power", "--format", "csv", "--now", "2026-05-01T00:00:00Z", sql}, flags...)
		out, code := run(t, append(args, c...)...)
		return strings.TrimSpace(out), code
	}
	out, code := query(`SELECT snapshot_id FROM system.snapshots WHERE "table" = 'power' ORDER BY committed_at DESC, snapshot_id LIMIT 1`)
	if code != 0 {
		t.Fatalf("snapshots: exit %d\n%s", code, out)
	}
	archived := strings.TrimPrefix(out, "snapshot_id\n")
	waitAfter(t, time.Now())
	between := time.Now().UTC().Format(time.RFC3339Nano)
	waitAfter(t, time.Now())

	// Ten readings of the archived day again under a higher version: late
	// corrections, to the cold tier.
	lines := strings.SplitAfter(deliveryCSV(2, -1), "\n")
	corr := lines[0]
	for _, l := range lines[1:11] {
		corr += strings.Replace(l, ",20260302000000,", ",20260303000000,", 1)
	}
	os.WriteFile(day, []byte(corr), 0o644)
	if out := mustRun(t, append([]string{"ingest", "--table", "power", day}, c...)...); !strings.Contains(out, "10 late to the cold tier; 10 superseded") {
		t.Fatalf("correction: %s", out)
	}

	const corrected = `SELECT count(*) FILTER (WHERE version = 20260303000000) AS n, count(*) AS rows FROM readings`
	for _, q := range []struct {
		flags []string
		want  string
	}{
		{nil, "n,rows\n10,192"},
		{[]string{"--as-of-snapshot", archived}, "n,rows\n0,192"},
		{[]string{"--as-of", between}, "n,rows\n0,192"},
		{[]string{"--known-at", between}, "n,rows\n0,192"},
		{[]string{"--as-of-snapshot", archived, "--known-at", "2026-01-01T00:00:00Z"}, "n,rows\n0,0"},
	} {
		if out, code := query(corrected, q.flags...); code != 0 || out != q.want {
			t.Errorf("query %v: exit %d\n%s\nwant\n%s", q.flags, code, out, q.want)
		}
	}
	// Without --table, a statement that names one table alone reads it as
	// of its snapshot as if --table had named it; one that reads two is
	// told that a snapshot is one table's, and which it reads.
	named := func(sql string) (string, int) {
		t.Helper()
		out, code := run(t, append([]string{"query", "--format", "csv", "--now", "2026-05-01T00:00:00Z", "--as-of-snapshot", archived, sql}, c...)...)
		return strings.TrimSpace(out), code
	}
	if out, code := named(strings.Replace(corrected, "FROM readings", "FROM power.readings", 1)); code != 0 || out != "n,rows\n0,192" {
		t.Errorf("query --as-of-snapshot of power.readings without --table: exit %d\n%s", code, out)
	}
	out, code = named(`SELECT count(*) FROM power.readings p JOIN gas.readings g USING (malo_id)`)
	if code != exitPermanent || !strings.Contains(out, "a snapshot is one table's") || !strings.Contains(out, "gas, power") {
		t.Errorf("query --as-of-snapshot of two tables: exit %d, want %d and the tables named\n%s", code, exitPermanent, out)
	}
	for _, flags := range [][]string{
		{"--as-of-snapshot", "1"},
		{"--as-of", "2000-01-01T00:00:00Z"},
		{"--known-at", "yesterday"},
		{"--as-of-snapshot", archived, "--as-of", between},
	} {
		if out, code := query(corrected, flags...); code != exitPermanent {
			t.Errorf("query %v: exit %d, want %d\n%s", flags, code, exitPermanent, out)
		}
	}
}

// waitAfter returns once the clock is past at, bounded.
func waitAfter(t *testing.T, at time.Time) {
	t.Helper()
	for range 1000 {
		if time.Now().After(at.Add(time.Millisecond)) {
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
	t.Fatalf("the clock did not pass %v", at)
}

// TestReadLine: the line after a result names the snapshot, the as-of
// commit and the ceilings; a plain read of the current state adds nothing
// but the snapshot.
func TestReadLine(t *testing.T) {
	at := time.Date(2026, 5, 1, 6, 0, 0, 123456000, time.UTC)
	for _, c := range []struct {
		h    store.ResultHeader
		want string
	}{
		{store.ResultHeader{}, ""},
		{store.ResultHeader{Snapshot: 42}, "; snapshot 42"},
		{store.ResultHeader{Snapshot: 42, AsOf: true, SnapshotAt: at, Ceiling: at},
			"; snapshot 42 (as of, committed 2026-05-01T06:00:00.123456Z); recorded_at <= 2026-05-01T06:00:00.123456Z"},
		{store.ResultHeader{Snapshot: 42, AsOf: true, SnapshotAt: at, Ceiling: at.Add(-time.Hour), KnownAt: at.Add(-time.Hour)},
			"; snapshot 42 (as of, committed 2026-05-01T06:00:00.123456Z); recorded_at <= 2026-05-01T05:00:00.123456Z"},
		{store.ResultHeader{Snapshot: 42, Ceiling: at, KnownAt: at}, "; snapshot 42; recorded_at <= 2026-05-01T06:00:00.123456Z"},
	} {
		if got := readLine(&c.h); got != c.want {
			t.Errorf("%+v:\ngot  %q\nwant %q", c.h, got, c.want)
		}
	}
}

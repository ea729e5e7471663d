package store

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/meterstore/meterstore/internal/pgtest"
)

// keySet returns the (market location, from, version, channel) of rows.
func keySet(rows []Reading) map[string]bool {
	out := map[string]bool{}
	for _, r := range rows {
		out[fmt.Sprint(r.MaLo, r.From.UTC().Format("2006-01-02T15:04"), r.Version, r.Extra["channel"])] = true
	}
	return out
}

// storedKeys returns the keys of power's readings_versions, each as often
// as stored.
func storedKeys(t *testing.T, s *Store) []string {
	t.Helper()
	res := mustQuery(t, s, `SELECT malo_id, strftime("from" AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M'), CAST(version AS BIGINT), channel FROM readings_versions`)
	var out []string
	for _, r := range res.Rows {
		out = append(out, fmt.Sprint(r[0], r[1], r[2], r[3]))
	}
	slices.Sort(out)
	return out
}

// restoredEnv opens a store on the database restored from backup, over
// e's warehouse, with the catalog's log where e keeps it.
func restoredEnv(t *testing.T, e *testEnv, backup string) *testEnv {
	t.Helper()
	url := pgtest.Restore(t, backup)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	return envOf(t, cfg, e.dir, e.log)
}

// TestRestoredDatabase restores the hot tier's database from a logical
// backup taken before more deliveries, a late correction and two more
// archival cycles, while the cold tier moved on. Either way no reading is
// counted twice or lost that a tier still holds; the rest is named.
//
// With the catalog's log on the object store the catalog moved on too:
// partitions the archival detached and dropped since come back attached
// below W. Status reports them unhealthy, naming them and why; the next
// archival cycle detaches each whose rows the cold tier holds, and drops
// them after the reader grace; status is healthy again.
//
// With the log in PostgreSQL the restore rewinds the catalog too: W is the
// backup's, the hot rows of the windows archived since are read from
// PostgreSQL again, and their data files are orphans that orphan removal
// deletes. The mirror holds copies of the commits the log lost, which
// status and verify name as such (not as a foreign writer's); resolving
// moves them aside, and the next cycles archive those windows again.
func TestRestoredDatabase(t *testing.T) {
	for _, log := range []string{LogObjectStore, LogPostgres} {
		t.Run(log, func(t *testing.T) { restoredDatabase(t, log) })
	}
}

func restoredDatabase(t *testing.T, log string) {
	ctx := t.Context()
	e := newEnvOn(t, log)
	s := e.open(t, Options{})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(12)); err != nil {
		t.Fatal(err)
	}
	var before []Reading
	for d := range 6 {
		rows := degradeBatch(d, d, false)
		mustWrite(t, s, rows)
		before = append(before, rows...)
	}
	if out, err := s.Archive(ctx, "power", dayN(4)); err != nil || !out.Watermark.Equal(dayN(2)) {
		t.Fatalf("archive: %+v, %v", out, err)
	}
	backup := pgtest.Backup(t, e.pool.Config().ConnString())

	// After the backup: deliveries of days 6 and 7, a late correction
	// below W, and two cycles that archive days 2 and 3.
	var after []Reading
	for _, rows := range [][]Reading{degradeBatch(10, 6, false), degradeBatch(11, 7, false), {qh(1000, 0, 0, "A", 2, 7)}} {
		mustWrite(t, s, rows)
		after = append(after, rows...)
	}
	for _, now := range []time.Time{dayN(5), dayN(6)} {
		if _, err := s.Archive(ctx, "power", now); err != nil {
			t.Fatal(err)
		}
	}

	r := restoredEnv(t, e, backup)
	rs := r.open(t, Options{})
	// What the restore keeps: every reading acknowledged before the
	// backup and, with the log on the object store, the late correction
	// the cold tier holds. The deliveries of days 6 and 7 are lost with
	// the backup's state of PostgreSQL.
	want := keySet(before)
	if log == LogObjectStore {
		for k := range keySet(after[len(after)-1:]) {
			want[k] = true
		}
	}
	exactly := func(when string) {
		t.Helper()
		got := storedKeys(t, rs)
		if len(got) != len(want) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Fatalf("%s: %d readings stored (%d distinct), want each of %d once", when, len(got), len(slices.Compact(slices.Clone(got))), len(want))
		}
		for _, k := range got {
			if !want[k] {
				t.Fatalf("%s: %s is stored and was never acknowledged or was lost", when, k)
			}
		}
	}
	exactly("after the restore")

	st := rs.Status(ctx, dayN(6))[0]
	t.Logf("status after the restore: %v", st.Err)
	if log == LogPostgres {
		restoredCatalog(t, rs, st)
		exactly("after the windows were archived again")
		return
	}
	var inv *InvariantError
	if st.Healthy || st.InvariantViolations != 4 || !errors.As(st.Err, &inv) ||
		!strings.Contains(st.Err.Error(), "power_p20260304, power_p20260305") || !strings.Contains(st.Err.Error(), "restored") {
		t.Fatalf("status after the restore: %+v", st)
	}
	out, err := rs.Archive(ctx, "power", dayN(6))
	if err != nil || len(out.Violations) > 0 || len(out.Reconciled) != 2 || !out.Reconciled[0].Equal(dayN(2)) {
		t.Fatalf("the archival after the restore: %+v, %v; want days 2 and 3 reconciled", out, err)
	}
	if st := rs.Status(ctx, dayN(6))[0]; !st.Healthy || st.InvariantViolations != 0 {
		t.Fatalf("status after the reconciliation: %+v", st)
	}
	exactly("after the reconciliation")
	if out, err := rs.Archive(ctx, "power", dayN(6)); err != nil || len(out.Dropped) != 2 {
		t.Fatalf("the archival after the reconciliation: %+v, %v; want its partitions dropped", out, err)
	}
	exactly("after the drops")
}

// restoredCatalog continues restoredDatabase with the log in PostgreSQL,
// restored with it, from status st after the restore.
func restoredCatalog(t *testing.T, rs *Store, st TableStatus) {
	ctx := t.Context()
	if st.Healthy || st.MirrorForks != 3 || !st.Watermark.Equal(dayN(2)) {
		t.Fatalf("status after the restore: %+v", st)
	}
	v := rs.Verify(ctx, VerifyOptions{})[0]
	problems := strings.Join(v.Problems, "\n")
	if len(v.Forks) != 3 || !strings.Contains(problems, "lost a commit it made") || strings.Contains(problems, "did not make") {
		t.Fatalf("verification after the restore: %q", v.Problems)
	}
	moved, err := rs.ResolveForks(ctx, "power")
	own := 0
	for _, f := range moved {
		if f.Table == "meterstore.power" {
			own++
		}
	}
	if err != nil || own != 3 {
		// The rest are the daily rollup's, whose log lost commits too.
		t.Fatalf("resolve: %v, %v", moved, err)
	}
	for range 3 {
		if _, err := rs.Archive(ctx, "power", dayN(6)); err != nil {
			t.Fatal(err)
		}
	}
	if w, _, err := rs.Watermark(ctx, "power"); err != nil || !w.Equal(dayN(4)) {
		t.Fatalf("W after the windows were archived again: %v, %v", w, err)
	}
	rep, err := rs.Orphans(ctx, "power", OrphanOptions{OlderThan: time.Nanosecond, Delete: true})
	if err != nil || rep.Deleted == 0 {
		t.Fatalf("orphans of the lost commits: %+v, %v", rep, err)
	}
	if st := rs.Status(ctx, dayN(6))[0]; !st.Healthy {
		t.Fatalf("status after the windows were archived again: %+v", st)
	}
	if v := rs.Verify(ctx, VerifyOptions{Deep: true})[0]; !v.OK() {
		t.Fatalf("verification after the windows were archived again: %+v", v)
	}
}

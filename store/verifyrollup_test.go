package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/internal/tampertest"
)

// TestTamperedRollupFileIsCaught alters the daily rollup's data file that a late correction superseded: the rollup rows
// that hold no longer come from it, so comparing them with the readings
// cannot see it, and only the rollup's tamper evidence can. A
// verification names the file, under the rollup's name,
// and compares no rollup rows; restored, the verification passes again.
// A rollup file nothing references, older than the safety age, is an
// orphan of the table, which Orphans removes; a compaction compacts the
// rollup too.
func TestTamperedRollupFileIsCaught(t *testing.T) {
	ctx := t.Context()
	s, e, _, _ := tamperFixture(t)
	// Meter 1's day 0 sums 0.002000 + 0.002001 + 0.001000 + 0.002003; a
	// correction of its first quarter hour makes the rollup write the
	// day again, in a file of its own.
	mustWrite(t, s, []Reading{qh(1, 0, 0, "A", 2, 5000)})
	out, err := s.Archive(ctx, "power", dayN(4))
	if err != nil || out.RollupSnapshot == 0 || out.RollupErr != "" {
		t.Fatalf("the cycle after the correction: %+v, %v", out, err)
	}
	var old, next string
	for _, f := range warehouseFiles(t, e.dir, "meterstore_daily/power/data") {
		p := filepath.Join(e.dir, f)
		switch {
		case !strings.HasSuffix(f, ".parquet"):
		case tampertest.Holds(t, p, "value_sum", 7004):
			old = p
		case tampertest.Holds(t, p, "value_sum", 10004):
			next = p
		}
	}
	if old == "" || next == "" || old == next {
		t.Fatalf("the rollup files of the day before and after the correction: %q, %q", old, next)
	}
	v := s.Verify(ctx, VerifyOptions{Deep: true})[0]
	if !v.OK() || v.RollupDays == 0 || len(v.RollupAlteredFiles) != 0 {
		t.Fatalf("deep verification of an intact rollup: %+v", v)
	}
	orig, err := os.ReadFile(old)
	if err != nil {
		t.Fatal(err)
	}
	// The rollup's files are too small to keep their size rewritten.
	if n := tampertest.SetDecimal(t, old, "value_sum", 7004, 7005, false); n != 1 {
		t.Fatalf("changed %d values, want 1", n)
	}
	for _, deep := range []bool{false, true} {
		v = s.Verify(ctx, VerifyOptions{Deep: deep})[0]
		t.Logf("verification (deep %v): %q", deep, v.Problems)
		if v.OK() || len(v.RollupAlteredFiles) != 1 || !strings.HasSuffix(v.RollupAlteredFiles[0], filepath.Base(old)) ||
			len(v.AlteredFiles) != 0 || v.RollupDays != 0 || len(v.Problems) != 1 ||
			!strings.Contains(v.Problems[0], "daily rollup") || !strings.Contains(v.Problems[0], filepath.Base(old)) {
			t.Fatalf("verification (deep %v) of the altered rollup file: %+v", deep, v)
		}
	}
	if err := os.WriteFile(old, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	if v := s.Verify(ctx, VerifyOptions{Deep: true})[0]; !v.OK() || v.RollupDays == 0 {
		t.Fatalf("deep verification after the restore: %+v", v)
	}

	// A file under the rollup's location nothing references.
	stray := filepath.Join(filepath.Dir(old), "stray.parquet")
	if err := os.WriteFile(stray, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	long := time.Now().Add(-2 * DefaultOrphanAge)
	if err := os.Chtimes(stray, long, long); err != nil {
		t.Fatal(err)
	}
	v = s.Verify(ctx, VerifyOptions{})[0]
	if v.OK() || len(v.Orphans) != 1 || !strings.HasSuffix(v.Orphans[0].Location, "stray.parquet") ||
		len(v.Problems) != 1 || !strings.Contains(v.Problems[0], "daily rollup") {
		t.Fatalf("verification with a stray rollup file: %+v", v)
	}
	rep, err := s.Orphans(ctx, "power", OrphanOptions{Delete: true})
	if err != nil || rep.Deleted != 1 || len(rep.Orphans) != 1 || !strings.HasSuffix(rep.Orphans[0].Location, "stray.parquet") {
		t.Fatalf("orphan removal: %+v, %v", rep, err)
	}
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Fatalf("the stray rollup file after its removal: %v", err)
	}
	if v := s.Verify(ctx, VerifyOptions{})[0]; !v.OK() {
		t.Fatalf("verification after the orphan removal: %+v", v)
	}

	// A compaction takes the rollup's two files of the month with it.
	c, err := s.Compact(ctx, "power", CompactOptions{})
	if err != nil || c.Rollup.SnapshotID == 0 || c.Rollup.FilesBefore != 2 || c.Rollup.FilesAfter != 1 {
		t.Fatalf("compaction: %+v, %v; want the rollup's files compacted", c, err)
	}
	// The table's compaction leaves the rollup a snapshot behind, until
	// the next cycle.
	if out, err := s.Archive(ctx, "power", dayN(4)); err != nil || out.RollupErr != "" {
		t.Fatalf("the cycle after the compaction: %+v, %v", out, err)
	}
	if v := s.Verify(ctx, VerifyOptions{Deep: true})[0]; !v.OK() || v.RollupDays == 0 {
		t.Fatalf("deep verification after the compaction: %+v", v)
	}

	// The files the compaction replaced go as the table's do: expiry takes
	// the rollup's snapshots with the table's, and orphan removal deletes
	// the files, so the superseded day's sum is in no file left.
	x := e.open(t, Options{Snapshots: SnapshotRetention{MaxAge: time.Millisecond, KeepLast: 1}})
	time.Sleep(5 * time.Millisecond)
	if ex, err := x.ExpireSnapshots(ctx, "power", time.Now()); err != nil || len(ex.Expired) == 0 || ex.RollupExpired == 0 {
		t.Fatalf("expiry: %+v, %v", ex, err)
	}
	if rep, err := x.Orphans(ctx, "power", OrphanOptions{OlderThan: time.Nanosecond, Delete: true}); err != nil || rep.Deleted == 0 {
		t.Fatalf("orphan removal after expiry: %+v, %v", rep, err)
	}
	for _, p := range []string{old, next} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("rollup file %s, which the compaction replaced, after expiry and orphan removal: %v", p, err)
		}
	}
	for _, f := range warehouseFiles(t, e.dir, "meterstore_daily/power/data") {
		if p := filepath.Join(e.dir, f); strings.HasSuffix(f, ".parquet") && tampertest.Holds(t, p, "value_sum", 7004) {
			t.Fatalf("rollup file %s still holds the superseded day's sum", f)
		}
	}
	if v := x.Verify(ctx, VerifyOptions{Deep: true})[0]; !v.OK() || v.RollupDays == 0 {
		t.Fatalf("deep verification after expiry and orphan removal: %+v", v)
	}
}

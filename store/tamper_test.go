package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meterstore/meterstore/internal/tampertest"
)

// tamperFixture archives two days of power: day 0 holds the value 0.001
// (unscaled 1000) on meter 1, day 1 four other readings on meter 2, each
// day in a data file of its own. It returns the store, its env and the
// data file of day 0 and of day 1, as paths.
func tamperFixture(t *testing.T) (*Store, *testEnv, string, string) {
	t.Helper()
	ctx := t.Context()
	e := newEnv(t)
	s := e.open(t, Options{})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(6)); err != nil {
		t.Fatal(err)
	}
	var rows []Reading
	for slot := range 4 {
		v := int64(2000 + slot)
		if slot == 2 {
			v = 1000
		}
		rows = append(rows, qh(1, 0, slot, "A", 1, v), qh(2, 1, slot, "A", 1, int64(3000+slot)))
	}
	mustWrite(t, s, rows)
	if _, err := s.Archive(ctx, "power", dayN(4)); err != nil {
		t.Fatal(err)
	}
	var day0, day1 string
	for _, f := range warehouseFiles(t, e.dir, "meterstore/power/data") {
		p := filepath.Join(e.dir, f)
		switch {
		case !strings.HasSuffix(f, ".parquet"):
		case tampertest.Holds(t, p, "value", 1000):
			day0 = p
		case tampertest.Holds(t, p, "value", 3000):
			day1 = p
		}
	}
	if day0 == "" || day1 == "" || day0 == day1 {
		t.Fatalf("fixture: the data files of day 0 and day 1: %q, %q", day0, day1)
	}
	if vs := s.Verify(ctx, VerifyOptions{Deep: true}); !vs[0].OK() || vs[0].HashedFiles != 2 || vs[0].UndigestedFiles != 0 {
		t.Fatalf("fixture: deep verification of an intact table: %+v", vs[0])
	}
	return s, e, day0, day1
}

// countBig counts power's readings above 1 (none but a tampered one).
const countBig = `SELECT count(*) FROM readings WHERE value > 1`

// TestTamperedFileIsCaughtAndRefused replaces the data file of day 0 with
// a valid Parquet file of the same size and row count with one value
// changed: once as the probe did, 0.001 to 1000.001, which moves the
// value column's bounds, so that a cheap verification sees it in the
// footer, and once within the bounds (0.002001 to 0.002002), which only
// the digest tells. Either way a deep verification names the file, the
// table turns unhealthy naming it (a cheap verification does not clear
// that), every read that would use the file fails naming it, in another
// process too, while day 1 still answers; once restored, a deep
// verification clears it.
func TestTamperedFileIsCaughtAndRefused(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from, to int64
		bounds   bool // the footer's bounds show it
	}{
		{"out of bounds", 1000, 1_000_001_000, true},
		{"within bounds", 2001, 2002, false},
	} {
		t.Run(tc.name, func(t *testing.T) { testTampered(t, tc.from, tc.to, tc.bounds) })
	}
}

func testTampered(t *testing.T, from, to int64, bounds bool) {
	ctx := t.Context()
	s, e, day0, _ := tamperFixture(t)
	orig, err := os.ReadFile(day0)
	if err != nil {
		t.Fatal(err)
	}
	probe := `SELECT count(*) FROM readings WHERE value = ` + decimalText(to)
	if got := mustQuery(t, s, probe).Rows[0][0]; got != int64(0) {
		t.Fatalf("fixture: %v readings of %s", got, decimalText(to))
	}

	if n := tampertest.SetDecimal(t, day0, "value", from, to, true); n != 1 {
		t.Fatalf("changed %d values, want 1", n)
	}
	fi, err := os.Stat(day0)
	if err != nil || fi.Size() != int64(len(orig)) {
		t.Fatalf("the altered file has %d bytes (%v), the original %d", fi.Size(), err, len(orig))
	}
	// Before anything looked at the file a read cannot tell it from the
	// original: its size is the committed one.
	t.Logf("before a verification, %s answers %v", probe, mustQuery(t, s, probe).Rows[0][0])

	if bounds {
		v := s.Verify(ctx, VerifyOptions{})[0]
		t.Logf("cheap verification: %q", v.Problems)
		if v.OK() || len(v.Problems) != 1 || !strings.Contains(v.Problems[0], filepath.Base(day0)) || !strings.Contains(v.Problems[0], "column value") {
			t.Fatalf("cheap verification of a file whose bounds moved: %+v", v)
		}
	}
	v := s.Verify(ctx, VerifyOptions{Deep: true})[0]
	t.Logf("deep verification: %q", v.Problems)
	if v.OK() || len(v.AlteredFiles) != 1 || !strings.HasSuffix(v.AlteredFiles[0], filepath.Base(day0)) ||
		len(v.Problems) != 1 || !strings.Contains(v.Problems[0], filepath.Base(day0)) || !strings.Contains(v.Problems[0], "SHA-256") {
		t.Fatalf("deep verification of the tampered file: %+v", v)
	}

	unhealthy := func(when string) {
		t.Helper()
		st := s.Status(ctx, dayN(4))[0]
		if st.Healthy || st.AlteredFiles != 1 || !errors.Is(st.Err, ErrAlteredFile) || !strings.Contains(st.Err.Error(), filepath.Base(day0)) {
			t.Fatalf("status %s: healthy %v, %d altered files, %v", when, st.Healthy, st.AlteredFiles, st.Err)
		}
	}
	unhealthy("after the deep verification")
	refused := func(s *Store, sql string) {
		t.Helper()
		res, err := s.Query(ctx, "power", sql)
		if !errors.Is(err, ErrAlteredFile) || !strings.Contains(err.Error(), filepath.Base(day0)) {
			t.Fatalf("%s reading the tampered file: %v, %v", sql, res, err)
		}
	}
	refused(s, probe)
	refused(s, `SELECT count(*) FROM readings_versions WHERE "from" < `+ts(dayN(1)))
	refused(e.open(t, Options{}), probe) // another process sees the finding
	if got := mustQuery(t, s, `SELECT count(*) FROM readings WHERE "from" >= `+ts(dayN(1))+` AND "from" < `+ts(dayN(2))).Rows[0][0]; got != int64(4) {
		t.Fatalf("day 1, in another file: %v readings, want 4", got)
	}

	// A cheap verification sees no more than the footer, so it does not
	// clear what a deep one found; nor does it compare the daily rollup
	// with a scan that would read the file (a difference in the tampered
	// day, drawn among its sample days now and then, would be reported as
	// the rollup's).
	if vs := s.Verify(ctx, VerifyOptions{}); vs[0].OK() == bounds || vs[0].RollupDays != 0 {
		t.Fatalf("cheap verification: %+v", vs[0])
	}
	unhealthy("after a cheap verification")
	refused(s, probe)

	if err := os.WriteFile(day0, orig, fi.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
	if vs := s.Verify(ctx, VerifyOptions{Deep: true}); !vs[0].OK() || vs[0].RollupDays == 0 {
		t.Fatalf("deep verification after the restore: %+v", vs[0])
	}
	if st := s.Status(ctx, dayN(4))[0]; !st.Healthy || st.AlteredFiles != 0 {
		t.Fatalf("status after the restore: %+v", st)
	}
	if got := mustQuery(t, s, `SELECT count(*) FROM readings WHERE value = `+decimalText(from)).Rows[0][0]; got != int64(1) {
		t.Fatalf("after the restore: %v readings of %s, want 1", got, decimalText(from))
	}
}

// decimalText spells the unscaled value v of a reading as SQL.
func decimalText(v int64) string { return fmt.Sprintf("%d.%06d", v/1_000_000, v%1_000_000) }

// TestResizedFileIsRefusedBeforeVerify replaces the data file of day 1 with
// a valid Parquet file of another size: the first query that plans it
// fails naming it, before any verification ran, and records the finding,
// so status reports the table unhealthy at once; restored, a cheap
// verification clears it and the counts are right again.
func TestResizedFileIsRefusedBeforeVerify(t *testing.T) {
	ctx := t.Context()
	s, _, _, day1 := tamperFixture(t)
	orig, err := os.ReadFile(day1)
	if err != nil {
		t.Fatal(err)
	}
	if n := tampertest.SetDecimal(t, day1, "value", 3000, 1_000_003_000, false); n != 1 {
		t.Fatalf("changed %d values, want 1", n)
	}
	fi, err := os.Stat(day1)
	if err != nil || fi.Size() == int64(len(orig)) {
		t.Fatalf("the altered file has %d bytes (%v), as the original", fi.Size(), err)
	}
	for _, sql := range []string{countBig, `SELECT count(*) FROM readings`} {
		res, err := s.Query(ctx, "power", sql)
		if !errors.Is(err, ErrAlteredFile) || !strings.Contains(err.Error(), filepath.Base(day1)) {
			t.Fatalf("%s with a resized file: %v, %v", sql, res, err)
		}
	}
	st := s.Status(ctx, dayN(4))[0]
	if st.Healthy || st.AlteredFiles != 1 || !strings.Contains(st.Err.Error(), filepath.Base(day1)) {
		t.Fatalf("status after a read found the file: healthy %v, %d altered, %v", st.Healthy, st.AlteredFiles, st.Err)
	}
	if vs := s.Verify(ctx, VerifyOptions{}); vs[0].OK() || !strings.Contains(strings.Join(vs[0].Problems, "\n"), filepath.Base(day1)) {
		t.Fatalf("cheap verification of the resized file: %+v", vs[0])
	}

	if err := os.WriteFile(day1, orig, fi.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
	if vs := s.Verify(ctx, VerifyOptions{}); !vs[0].OK() {
		t.Fatalf("cheap verification after the restore: %+v", vs[0])
	}
	if st := s.Status(ctx, dayN(4))[0]; !st.Healthy {
		t.Fatalf("status after the restore: %+v", st)
	}
	if got := mustQuery(t, s, `SELECT count(*) FROM readings`).Rows[0][0]; got != int64(8) {
		t.Fatalf("after the restore: %v readings, want 8", got)
	}
}

// TestAlteredMetadataIsCaught: the log records the SHA-256 of every
// metadata file it commits, so a current metadata file edited in place
// (here the digest of its digest index, as a forger who rewrote a data file
// and the index would) is reported by a verification, naming it; while it
// is, every read of the table's cold files is refused and status reports
// it; restored, the next verification clears it.
func TestAlteredMetadataIsCaught(t *testing.T) {
	ctx := t.Context()
	s, e, _, _ := tamperFixture(t)
	var current string
	for _, f := range warehouseFiles(t, e.dir, "meterstore/power/metadata") {
		if strings.HasSuffix(f, ".metadata.json") && !strings.HasPrefix(filepath.Base(f), "v") && f > current {
			current = f
		}
	}
	path := filepath.Join(e.dir, current)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	key := `"meterstore.digests-sha256":"`
	i := strings.LastIndex(string(orig), key)
	if i < 0 {
		t.Fatalf("fixture: %s names no digest index", current)
	}
	forged := []byte(string(orig))
	forged[i+len(key)] ^= 1 // one hex digit for another: same size, valid JSON
	if err := os.WriteFile(path, forged, 0o644); err != nil {
		t.Fatal(err)
	}

	v := s.Verify(ctx, VerifyOptions{})[0]
	t.Logf("verification: %q", v.Problems)
	if v.OK() || !slices.ContainsFunc(v.AlteredFiles, func(f string) bool { return strings.HasSuffix(f, filepath.Base(current)) }) {
		t.Fatalf("verification of an altered metadata file: %+v", v)
	}
	st := s.Status(ctx, dayN(4))[0]
	if st.Healthy || !errors.Is(st.Err, ErrAlteredFile) || !strings.Contains(st.Err.Error(), filepath.Base(current)) {
		t.Fatalf("status with an altered metadata file: %+v", st)
	}
	res, err := s.Query(ctx, "power", `SELECT count(*) FROM readings WHERE "from" >= `+ts(dayN(1))+` AND "from" < `+ts(dayN(2)))
	if !errors.Is(err, ErrAlteredFile) || !strings.Contains(err.Error(), filepath.Base(current)) {
		t.Fatalf("a read with an altered metadata file: %v, %v", res, err)
	}

	if err := os.WriteFile(path, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	if v := s.Verify(ctx, VerifyOptions{}); !v[0].OK() {
		t.Fatalf("verification after the restore: %+v", v[0])
	}
	if got := mustQuery(t, s, `SELECT count(*) FROM readings`).Rows[0][0]; got != int64(8) {
		t.Fatalf("after the restore: %v readings, want 8", got)
	}
}

// TestDigestCheckOnRead: with QueryOptions.VerifyDigests a query reads
// every planned file whole first, so the same-size altered file of day 0
// is refused before any verification ran, and recorded: status reports it
// and a store without the setting refuses it from then on. Day 1 still
// answers.
func TestDigestCheckOnRead(t *testing.T) {
	ctx := t.Context()
	s, e, day0, _ := tamperFixture(t)
	checking := e.open(t, Options{Query: QueryOptions{VerifyDigests: true}})
	if got := mustQuery(t, checking, countBig).Rows[0][0]; got != int64(0) {
		t.Fatalf("fixture: %v readings above 1", got)
	}
	if n := tampertest.SetDecimal(t, day0, "value", 1000, 1_000_001_000, true); n != 1 {
		t.Fatalf("changed %d values, want 1", n)
	}
	res, err := checking.Query(ctx, "power", countBig)
	if !errors.Is(err, ErrAlteredFile) || !strings.Contains(err.Error(), filepath.Base(day0)) || !strings.Contains(err.Error(), "SHA-256") {
		t.Fatalf("a query over the altered file with digests checked: %v, %v", res, err)
	}
	if st := s.Status(ctx, dayN(4))[0]; st.Healthy || st.AlteredFiles != 1 || !strings.Contains(st.Err.Error(), filepath.Base(day0)) {
		t.Fatalf("status after the read found the file: %+v", st)
	}
	if res, err := s.Query(ctx, "power", countBig); !errors.Is(err, ErrAlteredFile) {
		t.Fatalf("a store without the setting, after the finding: %v, %v", res, err)
	}
	day1 := `SELECT count(*) FROM readings WHERE "from" >= ` + ts(dayN(1)) + ` AND "from" < ` + ts(dayN(2))
	if got := mustQuery(t, checking, day1).Rows[0][0]; got != int64(4) {
		t.Fatalf("day 1: %v readings, want 4", got)
	}
}

package cold

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/internal/tampertest"
	"github.com/meterstore/meterstore/series"
)

// deepVerify verifies h, by sizes and footers and deeply, and fails the
// test unless every live data file has a digest, was hashed, and nothing
// is wrong; it returns the deep check.
func deepVerify(t *testing.T, e *env, h *Table, when string) FileCheck {
	t.Helper()
	if fc, err := e.tier.VerifyFiles(t.Context(), h, VerifyOptions{}); err != nil || len(fc.Problems) > 0 {
		t.Fatalf("%s: verification by sizes and footers %+v, %v", when, fc, err)
	}
	fc, err := e.tier.VerifyFiles(t.Context(), h, VerifyOptions{Deep: true})
	if err != nil {
		t.Fatalf("%s: %v", when, err)
	}
	if fc.Files == 0 || fc.Digested != fc.Files || fc.Undigested != 0 || fc.Hashed != fc.Files || len(fc.Problems) > 0 {
		t.Fatalf("%s: deep verification %+v", when, fc)
	}
	return fc
}

// TestDigestsOutliveCompactionAndExpiry: every commit records the digests
// of the files it adds, and the current snapshot leads to the digest of
// every live file after daily archivals and late corrections, after a
// compaction that re-marks a month and merges the rest, after a foreign
// commit without the summary keys, and after the expiry of all but the
// newest snapshot and the removal of every file nothing references.
func TestDigestsOutliveCompactionAndExpiry(t *testing.T) {
	e := newEnv(t, Options{})
	tab := loadProfile("power")
	h := e.ensure(t, tab)
	all := compactFixture(t, e, h, 6)
	before := deepVerify(t, e, h, "after archival and late corrections")

	x, err := e.tier.Compact(t.Context(), h, CompactOptions{ManifestsOver: 1, MinSmallFiles: 2})
	if err != nil || x.SnapshotID == 0 || x.Rewritten == 0 || x.Resettled == 0 {
		t.Fatalf("compaction: %+v, %v", x, err)
	}
	after := deepVerify(t, e, h, "after the compaction")
	if after.Files >= before.Files {
		t.Fatalf("the compaction left %d files of %d", after.Files, before.Files)
	}

	e.foreignAppend(t, h)
	deepVerify(t, e, h, "after a foreign commit")
	exp, err := e.tier.ExpireSnapshots(t.Context(), h, time.Now().AddDate(11, 0, 0), Retention{KeepLast: 1})
	if err != nil || !exp.Restamped || exp.Kept != 1 {
		t.Fatalf("expiry: %+v, %v", exp, err)
	}
	if s := e.summary(t, h); s[SummaryDigests] == "" || s[SummaryDigestsSHA256] == "" {
		t.Fatalf("the re-stamped snapshot names no digest index: %v", s)
	}
	rep, err := e.tier.Orphans(t.Context(), h, OrphanOptions{Before: time.Now().Add(time.Hour), Delete: true})
	if err != nil || rep.Deleted == 0 {
		t.Fatalf("orphan removal: %+v, %v", rep, err)
	}
	if n := len(e.files(t, ".json")); n == 0 {
		t.Fatal("no metadata left")
	}
	deepVerify(t, e, h, "after expiry and orphan removal")
	sameReadings(t, tab, collect(t, e.tier.Scan(t.Context(), h, series.Range{})), all)
}

// TestReplayedCommitKeepsEveryDigest: an archival that loses its commit to
// a late correction and, with commit retries, is staged again on the new
// head records the late correction's digest too, and leaves no index of
// its lost attempt.
func TestReplayedCommitKeepsEveryDigest(t *testing.T) {
	e := newEnv(t, Options{})
	h := e.ensure(t, loadProfile("power"))
	e.archive(t, h, jan2026, feb2026, quarterHours(0, jan2026, 8))
	ice, err := e.tier.Iceberg(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	tx := ice.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{table.CommitNumRetriesKey: "3", table.CommitMinRetryWaitMsKey: "1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	raced := false
	e.tier.beforeCommit = func(ctx context.Context, _ string) {
		e.tier.beforeCommit = nil
		fix := quarterHour(0, jan2026, 3)
		fix.Version += 10
		fix.Value += 7
		if _, err := e.tier.AppendLate(ctx, h, []series.Reading{fix}); err != nil {
			t.Error(err)
		}
		raced = true
	}
	e.archive(t, h, feb2026, mar2026, quarterHours(1, feb2026, 8))
	if !raced {
		t.Fatal("fixture: the late correction did not race the archival")
	}
	fc := deepVerify(t, e, h, "after the replayed archival")
	if fc.Files < 3 {
		t.Fatalf("%d files, want those of two windows and the late correction", fc.Files)
	}
	if u := e.unreferenced(t, h); len(u) > 0 {
		t.Fatalf("files no snapshot references: %v", u)
	}
}

// TestAdoptDigests: a table whose files were archived before digests were
// recorded verifies with its files counted as without digest; adopting
// them commits their digests, after which a deep verification proves
// every file, and a later archival carries them on.
func TestAdoptDigests(t *testing.T) {
	e := newEnv(t, Options{})
	tab := loadProfile("power")
	h := e.ensure(t, tab)
	// The legacy commit: a data file, written as the Tier writes them, in
	// a snapshot carrying W and no digest index.
	twin := *loadProfile("power")
	twin.Name = "twin"
	th := e.ensure(t, &twin)
	rows := quarterHours(0, jan2026, 8)
	e.archive(t, th, jan2026, feb2026, rows)
	tice, err := e.tier.Iceberg(t.Context(), th)
	if err != nil {
		t.Fatal(err)
	}
	src := dataFilesOf(t, tice, 0)
	if len(src) != 1 {
		t.Fatalf("fixture: twin has %d data files", len(src))
	}
	legacy := strings.Replace(src[0], "/twin/", "/power/", 1)
	copyTestFile(t, strings.TrimPrefix(src[0], "file://"), strings.TrimPrefix(legacy, "file://"))
	ice, err := e.foreign.LoadTable(t.Context(), h.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	tx := ice.NewTransaction()
	if err := tx.AddFiles(t.Context(), []string{legacy}, iceberg.Properties{SummaryWatermark: FormatTime(feb2026)}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}

	fc, err := e.tier.VerifyFiles(t.Context(), h, VerifyOptions{Deep: true})
	if err != nil || fc.Files != 1 || fc.Undigested != 1 || fc.Hashed != 0 || len(fc.Problems) > 0 {
		t.Fatalf("deep verification of a legacy table: %+v, %v", fc, err)
	}
	a, err := e.tier.AdoptDigests(t.Context(), h)
	if err != nil || a.Files != 1 || a.SnapshotID == 0 {
		t.Fatalf("adoption: %+v, %v", a, err)
	}
	s := e.summary(t, h)
	if s[SummaryDigestsAdopted] != "1" || s[SummaryWatermark] != FormatTime(feb2026) {
		t.Fatalf("the adoption's summary: %v", s)
	}
	deepVerify(t, e, h, "after the adoption")
	if again, err := e.tier.AdoptDigests(t.Context(), h); err != nil || again.SnapshotID != 0 {
		t.Fatalf("adoption with nothing to adopt: %+v, %v", again, err)
	}
	more := quarterHours(1, feb2026, 8)
	e.archive(t, h, feb2026, mar2026, more)
	deepVerify(t, e, h, "after an archival on the adopted digests")
	sameReadings(t, tab, collect(t, e.tier.Scan(t.Context(), h, series.Range{})), append(rows, more...))
}

// TestAlteredDigestIndex: a digest index that is not the one its snapshot
// committed is reported by a verification, naming it, and refuses the
// next commit rather than carry forged digests on.
func TestAlteredDigestIndex(t *testing.T) {
	e := newEnv(t, Options{})
	h := e.ensure(t, loadProfile("power"))
	e.archive(t, h, jan2026, feb2026, quarterHours(0, jan2026, 8))
	loc := e.summary(t, h)[SummaryDigests]
	path := strings.TrimPrefix(loc, "file://")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), `"sha256":"`, `"sha256":"0`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	fc, err := e.tier.VerifyFiles(t.Context(), h, VerifyOptions{})
	if err != nil || len(fc.Altered) != 1 || fc.Altered[0].File != loc || fc.Undigested != fc.Files ||
		len(fc.Problems) != 1 || !strings.Contains(fc.Problems[0], filepath.Base(path)) {
		t.Fatalf("verification of an altered index: %+v, %v", fc, err)
	}
	_, err = e.tier.Archive(t.Context(), h, mar2026, feb2026, mar2026, Readings(quarterHours(1, feb2026, 8)))
	if !errors.Is(err, ErrAltered) {
		t.Fatalf("an archival on an altered index: %v", err)
	}
	if got := e.files(t, ".parquet"); len(got) != 1 {
		t.Fatalf("the refused archival left files: %v", got)
	}
}

// TestCompactionRefusesAnAlteredFile: a compaction reads the files it
// rewrites and gives their rows a fresh digest, so it first proves each
// of them, and refuses a table with one altered rather than launder it.
func TestCompactionRefusesAnAlteredFile(t *testing.T) {
	e := newEnv(t, Options{})
	h := e.ensure(t, loadProfile("power"))
	for d := range 3 {
		from := jan2026.AddDate(0, 0, d)
		e.archive(t, h, from, from.AddDate(0, 0, 1), quarterHours(0, from, 8))
	}
	ice, err := e.tier.Iceberg(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	victim := strings.TrimPrefix(dataFilesOf(t, ice, 0)[0], "file://")
	// A valid file of the same size, row count and bounds, one value
	// changed: only its digest tells.
	if n := tampertest.SetDecimal(t, victim, "value", 1_000_003, 1_000_004, true); n != 1 {
		t.Fatalf("fixture: changed %d values", n)
	}
	_, err = e.tier.Compact(t.Context(), h, CompactOptions{})
	var ae *AlteredFileError
	if !errors.As(err, &ae) || !strings.HasSuffix(ae.File, filepath.Base(victim)) || !ae.ByDigest {
		t.Fatalf("compaction over an altered file: %v", err)
	}
	if cur, err := e.tier.Iceberg(t.Context(), h); err != nil || cur.CurrentSnapshot().SnapshotID != ice.CurrentSnapshot().SnapshotID {
		t.Fatalf("the refused compaction committed: %v", err)
	}
}

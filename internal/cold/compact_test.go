package cold

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/series"
)

// compactFixture archives January as daily windows, each with a second
// version of some readings (a current and a superseded file per window),
// then February as one window, and adds late corrections to January (open
// files). It returns every reading written.
func compactFixture(t *testing.T, e *env, h *Table, days int) []series.Reading {
	t.Helper()
	var all []series.Reading
	for d := range days {
		from := jan2026.AddDate(0, 0, d)
		var rows []series.Reading
		for k := range 8 {
			r := quarterHour(d%3, from, k)
			rows = append(rows, r)
			if k%2 == 0 {
				r2 := r
				r2.Version += 100
				r2.Value += 1
				rows = append(rows, r2)
			}
		}
		to := from.AddDate(0, 0, 1)
		if _, err := e.tier.Archive(t.Context(), h, to, from, to, Readings(rows)); err != nil {
			t.Fatal(err)
		}
		all = append(all, rows...)
	}
	feb := quarterHours(4, feb2026, 8)
	e.archive(t, h, feb2026, mar2026, feb)
	all = append(all, feb...)
	for i := range 3 {
		fix := quarterHour(0, jan2026, 2*i)
		fix.Version += 1000
		fix.Value += 42
		if _, err := e.tier.AppendLate(t.Context(), h, []series.Reading{fix}); err != nil {
			t.Fatal(err)
		}
		all = append(all, fix)
	}
	return all
}

// TestCompact compacts a table of many small commits and late corrections:
// files and manifests shrink, the rows and W stay as they were, and so do
// the superseded marks when the files are copied; when the month with late
// corrections is re-marked instead, every reading is decided. Either way a
// read resolves by the marks as by the versions.
func TestCompact(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     CompactOptions
		resettle bool
	}{
		{"keep open", CompactOptions{ManifestsOver: 9, KeepOpen: true}, false},
		{"too large to re-mark", CompactOptions{ManifestsOver: 9, ResettleRows: 10}, false},
		{"re-mark", CompactOptions{ManifestsOver: 9}, true},
	} {
		t.Run(tc.name, func(t *testing.T) { testCompact(t, tc.opts, tc.resettle) })
	}
}

func testCompact(t *testing.T, opts CompactOptions, resettle bool) {
	e := newEnv(t, Options{})
	tab := loadProfile("power")
	h := e.ensure(t, tab)
	all := compactFixture(t, e, h, 6)

	// Below its thresholds (10 manifests, 6 small files in a partition)
	// Compact is a check that commits nothing.
	skip, err := e.tier.Compact(t.Context(), h, CompactOptions{ManifestsOver: 10, SmallFilesOver: 6})
	if err != nil || skip.SnapshotID != 0 || skip.ManifestsBefore != 10 || skip.FilesAfter != 16 {
		t.Fatalf("compaction below its thresholds: %+v, %v; want nothing committed", skip, err)
	}

	before := collect(t, e.tier.Scan(t.Context(), h, series.Range{}))
	sameReadings(t, tab, before, all)
	marks := e.marks(t, h)
	w0, _, err := e.tier.Watermark(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}

	got, err := e.tier.Compact(t.Context(), h, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compaction: %+v", got)
	// January: 6 current, 6 superseded, 3 open files, rewritten as one of
	// each, or re-marked as one current and one superseded file;
	// February: 1 current file, left alone.
	filesAfter, written, resettled, kinds := 4, 3, 0, []FileKind{Current, Superseded, Open, Current}
	if resettle {
		filesAfter, written, resettled, kinds = 3, 2, 15, []FileKind{Current, Superseded, Current}
	}
	if got.FilesBefore != 16 || got.FilesAfter != filesAfter || got.Rewritten != 15 || got.Written != written || got.Resettled != resettled || got.Partitions != 3 {
		t.Errorf("files %d -> %d, rewrote %d (re-marked %d) into %d in %d partitions; want 16 -> %d, 15 (%d) into %d in 3",
			got.FilesBefore, got.FilesAfter, got.Rewritten, got.Resettled, got.Written, got.Partitions, filesAfter, resettled, written)
	}
	if got.ManifestsBefore != 10 || got.ManifestsAfter != 1 {
		t.Errorf("manifests %d -> %d, want 10 -> 1", got.ManifestsBefore, got.ManifestsAfter)
	}
	if want := int64(len(all) - 8); got.Rows != want {
		t.Errorf("rows rewritten %d, want %d", got.Rows, want)
	}
	if !got.Watermark.Equal(w0) {
		t.Errorf("compaction reports W %s, want %s", got.Watermark, w0)
	}

	sum := e.summary(t, h)
	if sum[SummaryWatermark] != FormatTime(w0) || sum[SummaryCompacted] != "15" || resettle != (sum[SummaryResettled] == "15") {
		t.Errorf("summary %v: want W %s, %s=15 and %s=15 if re-marked", sum, FormatTime(w0), SummaryCompacted, SummaryResettled)
	}
	if w, _, err := e.tier.Watermark(t.Context(), h); err != nil || !w.Equal(w0) {
		t.Errorf("W after compaction %s (%v), want %s", w, err, w0)
	}
	sameReadings(t, tab, collect(t, e.tier.Scan(t.Context(), h, series.Range{})), all)
	want := marks
	if resettle {
		want = decided(all)
	}
	if after := e.marks(t, h); !maps.Equal(after, want) {
		t.Errorf("superseded marks:\n got %v\nwant %v", after, want)
	}
	checkResolution(t, tab, e.marksOf(t, h))

	p, err := e.tier.Plan(t.Context(), h, series.Range{})
	if err != nil {
		t.Fatal(err)
	}
	if !sameKinds(p.Kinds, kinds...) {
		t.Errorf("kinds after compaction %v: want %v", p.Kinds, kinds)
	}
	if u := e.unreferenced(t, h); len(u) > 0 {
		t.Errorf("files no snapshot references: %v", u)
	}

	again, err := e.tier.Compact(t.Context(), h, CompactOptions{KeepOpen: opts.KeepOpen, ResettleRows: opts.ResettleRows})
	if err != nil {
		t.Fatal(err)
	}
	if again.SnapshotID != 0 || again.FilesAfter != filesAfter || again.ManifestsAfter != 1 {
		t.Errorf("second compaction %+v: want nothing committed", again)
	}

	// Appends after a compaction merge manifests on their own once there
	// are many: the merge stays enabled.
	ice, err := e.tier.Iceberg(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	if p := ice.Properties(); p[table.ManifestMergeEnabledKey] != "true" || p[table.ManifestMinMergeCountKey] != "" {
		t.Errorf("properties after compaction: merge %q, min count %q; want true and the default",
			p[table.ManifestMergeEnabledKey], p[table.ManifestMinMergeCountKey])
	}
}

// decided returns the marks an archival of rows gives them, as marks
// reads them: per market location and from (the fixture's only series
// keys), every version but the highest superseded.
func decided(rows []series.Reading) map[string]bool {
	top := map[string]uint64{}
	for _, r := range rows {
		k := markKey(r.MaLo, r.From.UnixMicro(), 0)
		top[k] = max(top[k], r.Version)
	}
	out := map[string]bool{}
	for _, r := range rows {
		out[markKey(r.MaLo, r.From.UnixMicro(), r.Version)] = r.Version != top[markKey(r.MaLo, r.From.UnixMicro(), 0)]
	}
	return out
}

// TestCompactManifestsOnly merges the manifests of a table whose files
// are all large enough: no data file is rewritten.
func TestCompactManifestsOnly(t *testing.T) {
	e := newEnv(t, Options{})
	tab := loadProfile("power")
	h := e.ensure(t, tab)
	all := compactFixture(t, e, h, 3)
	got, err := e.tier.Compact(t.Context(), h, CompactOptions{SmallFileSize: 1, KeepOpen: true})
	if err != nil {
		t.Fatal(err)
	}
	if got.SnapshotID == 0 || got.Rewritten != 0 || got.FilesAfter != got.FilesBefore || got.ManifestsAfter != 1 || got.ManifestsBefore != 7 {
		t.Errorf("compaction %+v: want only the 7 manifests merged into 1", got)
	}
	sameReadings(t, tab, collect(t, e.tier.Scan(t.Context(), h, series.Range{})), all)
}

// TestCompactConflict lets a late correction land between a compaction's
// planning and its commit: the compaction is refused, leaves no file
// behind, and the next one compacts the correction too.
func TestCompactConflict(t *testing.T) {
	e := newEnv(t, Options{})
	tab := loadProfile("power")
	h := e.ensure(t, tab)
	all := compactFixture(t, e, h, 4)
	fix := quarterHour(1, jan2026.AddDate(0, 0, 1), 3)
	fix.Version += 5000
	all = append(all, fix)
	landed := false
	e.tier.beforeCommit = func(ctx context.Context, _ string) {
		e.tier.beforeCommit = nil
		if _, err := e.tier.AppendLate(ctx, h, []series.Reading{fix}); err != nil {
			t.Error(err)
			return
		}
		landed = true
	}
	_, err := e.tier.Compact(t.Context(), h, CompactOptions{})
	if !landed {
		t.Fatal("the hook did not commit")
	}
	if !errors.Is(err, ErrCompactionConflict) || !errors.Is(err, table.ErrCommitFailed) {
		t.Fatalf("compaction overtaken by a commit: %v, want ErrCompactionConflict and table.ErrCommitFailed", err)
	}
	if u := e.unreferenced(t, h); len(u) > 0 {
		t.Fatalf("the refused compaction left files behind: %v", u)
	}
	sameReadings(t, tab, collect(t, e.tier.Scan(t.Context(), h, series.Range{})), all)

	got, err := e.tier.Compact(t.Context(), h, CompactOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.SnapshotID == 0 || got.ManifestsAfter != 1 || got.FilesAfter != 3 || got.Resettled != 12 {
		t.Errorf("compaction after the conflict %+v: want January's 12 files re-marked, 3 files in 1 manifest", got)
	}
	sameReadings(t, tab, collect(t, e.tier.Scan(t.Context(), h, series.Range{})), all)
	checkResolution(t, tab, e.marksOf(t, h))
}

// A marked is a stored reading with its superseded mark: nil where
// nobody decided it (a late correction).
type marked struct {
	r          series.Reading
	superseded *bool
}

// marksOf returns every stored reading of h with its mark.
func (e *env) marksOf(t *testing.T, h *Table) []marked {
	t.Helper()
	marks := e.marks(t, h)
	var out []marked
	for _, r := range collect(t, e.tier.Scan(t.Context(), h, series.Range{})) {
		k := markKey(r.MaLo, r.From.UnixMicro(), r.Version)
		m := marked{r: r}
		if v, ok := marks[k]; ok {
			m.superseded = &v
		} else if !marks[k+"|null"] {
			t.Fatalf("reading %s has no mark", k)
		}
		out = append(out, m)
	}
	return out
}

// checkResolution fails t unless resolution marks rows right.
func checkResolution(t *testing.T, tab *series.Table, rows []marked) {
	t.Helper()
	if err := resolution(tab, rows); err != nil {
		t.Fatal(err)
	}
}

// resolution returns an error unless the marks of rows resolve as a read
// trusts them to, to the same winner per merge key as comparing all
// versions (highest version, then latest recorded_at): a key without an
// undecided row has exactly one row marked current, its winner; a key with
// undecided rows (late corrections) resolves among those and the rows
// marked current, never one marked superseded.
func resolution(tab *series.Table, rows []marked) error {
	better := func(a, b series.Reading) bool {
		if c := cmp.Compare(a.Version, b.Version); c != 0 {
			return c > 0
		}
		return a.RecordedAt.After(b.RecordedAt)
	}
	key := func(r *series.Reading) string {
		return seriesKey(tab, r) + "|" + r.From.Format(time.RFC3339Nano)
	}
	type keyState struct {
		best      series.Reading // of all rows
		candidate series.Reading // of the rows not marked superseded
		current   int            // rows marked current
		open      bool           // some row undecided
		any       bool
	}
	keys := map[string]*keyState{}
	for _, m := range rows {
		k := key(&m.r)
		st := keys[k]
		if st == nil {
			st = &keyState{best: m.r}
			keys[k] = st
		} else if better(m.r, st.best) {
			st.best = m.r
		}
		switch {
		case m.superseded == nil:
			st.open = true
		case *m.superseded:
			continue
		default:
			st.current++
		}
		if !st.any || better(m.r, st.candidate) {
			st.candidate, st.any = m.r, true
		}
	}
	for k, st := range keys {
		switch {
		case !st.open && st.current != 1:
			return fmt.Errorf("merge key %s: %d rows marked current, and no late correction", k, st.current)
		case !st.any:
			return fmt.Errorf("merge key %s: every row is marked superseded", k)
		case st.candidate.Version != st.best.Version || !st.candidate.RecordedAt.Equal(st.best.RecordedAt):
			return fmt.Errorf("merge key %s: the marks resolve to version %d, the versions to %d", k, st.candidate.Version, st.best.Version)
		}
	}
	return nil
}

// TestResolutionCatchesWrongMarks shows that the resolution check of the
// compaction tests fails on a wrong mark: a late correction marked
// superseded, or a superseded version marked current.
func TestResolutionCatchesWrongMarks(t *testing.T) {
	e := newEnv(t, Options{})
	tab := loadProfile("power")
	h := e.ensure(t, tab)
	compactFixture(t, e, h, 2)
	rows := e.marksOf(t, h)
	if err := resolution(tab, rows); err != nil {
		t.Fatal(err)
	}
	yes, no := true, false
	var late, old int = -1, -1
	for i, m := range rows {
		switch {
		case m.superseded == nil:
			late = i
		case *m.superseded:
			old = i
		}
	}
	if late < 0 || old < 0 {
		t.Fatal("fixture: no late correction or no superseded version")
	}
	for name, broken := range map[string]func([]marked){
		"correction marked superseded": func(rs []marked) { rs[late].superseded = &yes },
		"superseded marked current":    func(rs []marked) { rs[old].superseded = &no },
	} {
		rs := slices.Clone(rows)
		broken(rs)
		if err := resolution(tab, rs); err == nil {
			t.Errorf("%s: not caught", name)
		}
	}
}

// TestCompactThenExpireAndOrphans: the files a compaction replaced stay
// while a snapshot references them, and once expiry removed those
// snapshots, orphan cleanup deletes them, and only them: the table reads
// the same throughout.
func TestCompactThenExpireAndOrphans(t *testing.T) {
	e := newEnv(t, Options{})
	tab := loadProfile("power")
	h := e.ensure(t, tab)
	all := compactFixture(t, e, h, 3)
	before := e.files(t, ".parquet")
	got, err := e.tier.Compact(t.Context(), h, CompactOptions{})
	if err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	rep, err := e.tier.Orphans(t.Context(), h, OrphanOptions{Before: future})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Orphans) != 0 {
		t.Fatalf("orphans while older snapshots reference the replaced files: %v", rep.Orphans)
	}
	x, err := e.tier.ExpireSnapshots(t.Context(), h, future.AddDate(DefaultRetentionYears, 0, 1), Retention{KeepLast: 1})
	if err != nil {
		t.Fatal(err)
	}
	if x.Kept != 1 {
		t.Fatalf("expiry kept %d snapshots, want 1", x.Kept)
	}
	rep, err = e.tier.Orphans(t.Context(), h, OrphanOptions{Before: future, Delete: true})
	if err != nil {
		t.Fatal(err)
	}
	var data int
	for _, o := range rep.Orphans {
		if strings.HasSuffix(o.Location, ".parquet") {
			data++
		}
	}
	if data != got.Rewritten {
		t.Fatalf("orphan data files %d, want the %d the compaction replaced", data, got.Rewritten)
	}
	if after := e.files(t, ".parquet"); len(after) != len(before)-got.Rewritten+got.Written {
		t.Fatalf("%d data files left, want %d", len(after), len(before)-got.Rewritten+got.Written)
	}
	sameReadings(t, tab, collect(t, e.tier.Scan(t.Context(), h, series.Range{})), all)
}

// TestCompactUndeclaredColumns re-marks a month with late corrections on a
// table whose schema has columns the declaration lacks: a column no file
// holds a value in (added by a foreign tool) does not stop it; one whose
// values are in the month's files (declared by another process) does,
// since re-encoding the rows from readings of this declaration would lose
// them, and they stay.
func TestCompactUndeclaredColumns(t *testing.T) {
	t.Run("no values", func(t *testing.T) {
		e := newEnv(t, Options{})
		tab := loadProfile("power")
		h := e.ensure(t, tab)
		all := compactFixture(t, e, h, 6)
		ice, err := e.foreign.LoadTable(t.Context(), h.Identifier())
		if err != nil {
			t.Fatal(err)
		}
		tx := ice.NewTransaction()
		if err := tx.UpdateSchema(true, false).AddColumn([]string{"spark_tag"}, iceberg.PrimitiveTypes.String, "", false, nil).Commit(); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Commit(t.Context()); err != nil {
			t.Fatal(err)
		}
		got, err := e.tier.Compact(t.Context(), h, CompactOptions{ManifestsOver: 9})
		if err != nil || got.Resettled != 15 {
			t.Fatalf("compaction with an empty undeclared column: %+v, %v; want 15 files re-marked", got, err)
		}
		sameReadings(t, tab, collect(t, e.tier.Scan(t.Context(), h, series.Range{})), all)
	})
	t.Run("values", func(t *testing.T) {
		e := newEnv(t, Options{})
		tab := loadProfile("power")
		h := e.ensure(t, tab)
		all := compactFixture(t, e, h, 6)
		narrow := *tab
		narrow.Columns = slices.DeleteFunc(slices.Clone(tab.Columns), func(c series.Column) bool { return c.Name == "source" })
		hn := e.ensure(t, &narrow)
		got, err := e.tier.Compact(t.Context(), hn, CompactOptions{ManifestsOver: 9})
		if err != nil || got.Resettled != 0 || got.SnapshotID == 0 {
			t.Fatalf("compaction without source declared: %+v, %v; want a compaction that re-marks nothing", got, err)
		}
		sameReadings(t, tab, collect(t, e.tier.Scan(t.Context(), h, series.Range{})), all)
	})
}

// TestCompactSettled compacts, below every threshold, the month partitions
// that no archival window reaches again, and only those: January's daily
// current and superseded files become one of each once W passes February
// 1st, with the rows, W and every superseded mark as they were, while
// February's daily files wait.
func TestCompactSettled(t *testing.T) {
	e := newEnv(t, Options{})
	tab := loadProfile("power")
	h := e.ensure(t, tab)
	opts := CompactOptions{ManifestsOver: 1000, SmallFilesOver: 1000, Settled: true}
	var all []series.Reading
	day := func(from, to time.Time) {
		t.Helper()
		var rows []series.Reading
		for i := range 3 {
			for k := range 8 {
				r := quarterHour(i, from, k)
				rows = append(rows, r)
				if k%2 == 0 {
					r2 := r
					r2.Version += 100
					r2.Value += 1
					rows = append(rows, r2)
				}
			}
		}
		if _, err := e.tier.Archive(t.Context(), h, to, from, to, Readings(rows)); err != nil {
			t.Fatal(err)
		}
		all = append(all, rows...)
	}
	for d := range 3 {
		day(jan2026.AddDate(0, 0, d), jan2026.AddDate(0, 0, d+1))
	}
	if c, err := e.tier.Compact(t.Context(), h, opts); err != nil || c.SnapshotID != 0 {
		t.Fatalf("compaction of an unsettled month: %+v, %v; want nothing committed", c, err)
	}
	day(jan2026.AddDate(0, 0, 3), feb2026)
	for d := range 2 {
		day(feb2026.AddDate(0, 0, d), feb2026.AddDate(0, 0, d+1))
	}
	before := e.marks(t, h)
	w0, _, err := e.tier.Watermark(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.tier.Compact(t.Context(), h, opts)
	if err != nil {
		t.Fatal(err)
	}
	// January: 4 current and 4 superseded files into one of each;
	// February: 2 of each, left alone.
	if got.FilesBefore != 12 || got.Rewritten != 8 || got.Written != 2 || got.FilesAfter != 6 || got.Partitions != 2 {
		t.Fatalf("compaction %+v: want 12 files, 8 of January rewritten into 2", got)
	}
	if w, _, err := e.tier.Watermark(t.Context(), h); err != nil || !w.Equal(w0) || !got.Watermark.Equal(w0) {
		t.Errorf("W after compaction %s (%v), reported %s, want %s", w, err, got.Watermark, w0)
	}
	sameReadings(t, tab, collect(t, e.tier.Scan(t.Context(), h, series.Range{})), all)
	if after := e.marks(t, h); !maps.Equal(after, before) {
		t.Errorf("superseded marks:\n got %v\nwant %v", after, before)
	}
	checkResolution(t, tab, e.marksOf(t, h))
	if again, err := e.tier.Compact(t.Context(), h, opts); err != nil || again.SnapshotID != 0 {
		t.Errorf("second compaction %+v, %v: want nothing committed", again, err)
	}
}

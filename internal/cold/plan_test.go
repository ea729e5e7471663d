package cold

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/series"
)

// archiveTwoMonths archives January and February 2026 as two windows, four
// locations with readings on the first day of each, so that W is March.
func archiveTwoMonths(t *testing.T, e *env, h *Table) {
	t.Helper()
	for _, w := range [][2]time.Time{{jan2026, feb2026}, {feb2026, mar2026}} {
		var rows []series.Reading
		for i := range 4 {
			rows = append(rows, quarterHours(i, w[0], 96)...)
		}
		e.archive(t, h, w[0], w[1], rows)
	}
}

func TestPlanPrunesOtherMonths(t *testing.T) {
	e := newEnv(t, Options{})
	h := e.ensure(t, loadProfile("power"))

	p, err := e.tier.Plan(t.Context(), h, series.Range{})
	if err != nil || p.HasWatermark || p.SnapshotID != 0 || len(p.Files) != 0 {
		t.Fatalf("plan of an empty table: %+v %v", p, err)
	}
	archiveTwoMonths(t, e, h)
	all := e.files(t, ".parquet")
	month := func(files []string, m string) []string {
		return slices.DeleteFunc(slices.Clone(files), func(f string) bool { return !strings.Contains(f, "from_month="+m) })
	}
	if len(month(all, "2026-01")) == 0 || len(month(all, "2026-02")) == 0 {
		t.Fatalf("fixture: data files %v", all)
	}
	ice, err := e.tier.Iceberg(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	current := ice.CurrentSnapshot().SnapshotID

	rel := func(p Plan) []string {
		var out []string
		for _, f := range p.Files {
			path, ok := localPath(f)
			if !ok {
				t.Fatalf("planned file %s is not local", f)
			}
			r, err := filepath.Rel(e.dir, path)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		slices.Sort(out)
		return out
	}
	for _, c := range []struct {
		name     string
		from, to time.Time
		want     []string
	}{
		{"february", feb2026, mar2026, month(all, "2026-02")},
		{"an hour of january", jan2026.Add(12 * time.Hour), jan2026.Add(13 * time.Hour), month(all, "2026-01")},
		// The readings cover each month's first day: statistics prune the rest.
		{"a day of january without readings", jan2026.Add(24 * time.Hour), jan2026.Add(48 * time.Hour), nil},
		{"across the months", jan2026.Add(12 * time.Hour), feb2026.Add(time.Hour), all},
		{"open", time.Time{}, time.Time{}, all},
		{"open end", feb2026, time.Time{}, month(all, "2026-02")},
		{"open start", time.Time{}, feb2026, month(all, "2026-01")},
		{"above W", mar2026, time.Time{}, nil},
		{"empty range", feb2026, feb2026, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := e.tier.Plan(t.Context(), h, series.Range{From: c.from, To: c.to})
			if err != nil {
				t.Fatal(err)
			}
			if !p.HasWatermark || !p.Watermark.Equal(mar2026) {
				t.Fatalf("W %v %v, want %v", p.Watermark, p.HasWatermark, mar2026)
			}
			if got := rel(p); !slices.Equal(got, c.want) {
				t.Fatalf("files\n got %v\nwant %v", got, c.want)
			}
			var size int64
			for _, f := range p.Files {
				fi, err := os.Stat(strings.TrimPrefix(f, "file://"))
				if err != nil {
					t.Fatal(err)
				}
				size += fi.Size()
			}
			if p.Bytes != size {
				t.Fatalf("bytes %d, want %d", p.Bytes, size)
			}
			if c.want != nil && p.SnapshotID != current {
				t.Fatalf("snapshot %d, want the current %d", p.SnapshotID, current)
			}
		})
	}
}

func TestPlanWatermarkOfTheSnapshot(t *testing.T) {
	e := newEnv(t, Options{})
	h := e.ensure(t, loadProfile("power"))
	e.archive(t, h, jan2026, feb2026, quarterHours(0, jan2026, 8))
	// A foreign commit carries no watermark: the plan's is its parent's.
	next := e.foreignAppend(t, h)
	p, err := e.tier.Plan(t.Context(), h, series.Range{})
	if err != nil {
		t.Fatal(err)
	}
	if !p.HasWatermark || !p.Watermark.Equal(feb2026) || p.SnapshotID != next.CurrentSnapshot().SnapshotID || len(p.Files) == 0 {
		t.Fatalf("plan %+v, want W %v at snapshot %d", p, feb2026, next.CurrentSnapshot().SnapshotID)
	}
}

func TestPlanRefusesDeleteFiles(t *testing.T) {
	e := newEnv(t, Options{})
	h := e.ensure(t, loadProfile("power"))
	var rows []series.Reading
	for i := range 3 {
		rows = append(rows, quarterHours(i, jan2026, 8)...)
	}
	e.archive(t, h, jan2026, feb2026, rows)

	// A foreign engine deletes one location's rows, merge-on-read.
	ice, err := e.foreign.LoadTable(t.Context(), h.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	tx := ice.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{table.WriteDeleteModeKey: table.WriteModeMergeOnRead}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Delete(t.Context(), iceberg.EqualTo(iceberg.Reference("malo_id"), malo(1)), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, err = e.tier.Plan(t.Context(), h, series.Range{})
	if !errors.Is(err, ErrDeleteFiles) {
		t.Fatalf("plan with delete files: %v, want %v", err, ErrDeleteFiles)
	}
}

func TestPlanLocalOfAFileWarehouse(t *testing.T) {
	e := newEnv(t, Options{})
	h := e.ensure(t, loadProfile("power"))
	e.archive(t, h, jan2026, feb2026, quarterHours(0, jan2026, 8))
	p, err := e.tier.Plan(t.Context(), h, series.Range{})
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	l, err := p.Local(t.Context(), NewCopies(CopyOptions{Dir: cache}))
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range l.Files {
		if f != strings.TrimPrefix(p.Files[i], "file://") || !strings.HasPrefix(f, e.dir) {
			t.Fatalf("local path %s of %s", f, p.Files[i])
		}
	}
	if entries, _ := os.ReadDir(cache); len(entries) != 0 {
		t.Fatalf("a local warehouse was copied: %v", entries)
	}
}

func TestLocalizeCopiesOnce(t *testing.T) {
	const loc = "mem://plan-test-bucket/data/a.parquet"
	fsys, err := icebergio.LoadFS(t.Context(), nil, loc)
	if err != nil {
		t.Fatal(err)
	}
	content := bytes.Repeat([]byte("PAR1 immutable "), 1000)
	if err := fsys.(icebergio.WriteFileIO).WriteFile(loc, content); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Remove(loc) })
	cache := filepath.Join(t.TempDir(), "cache")
	copies := NewCopies(CopyOptions{Dir: cache})
	path, err := copies.Localize(t.Context(), fsys, loc)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, content) {
		t.Fatalf("copy %s: %d bytes, %v", path, len(got), err)
	}
	if !strings.HasPrefix(path, cache+string(filepath.Separator)) {
		t.Fatalf("copy %s outside the cache %s", path, cache)
	}
	// The copy is not made again: the object is immutable.
	if err := fsys.Remove(loc); err != nil {
		t.Fatal(err)
	}
	if again, err := copies.Localize(t.Context(), fsys, loc); err != nil || again != path {
		t.Fatalf("second localize: %s %v, want the cached %s", again, err, path)
	}
	// No temporary file is left behind.
	if entries, _ := os.ReadDir(cache); len(entries) != 1 {
		t.Fatalf("cache holds %v", entries)
	}
	// Another location is another copy; a missing one is an error.
	if _, err := copies.Localize(t.Context(), fsys, "mem://plan-test-bucket/data/missing.parquet"); err == nil {
		t.Fatal("a missing object was localized")
	}
	if p, err := (*Copies)(nil).Localize(t.Context(), fsys, "file:///srv/wh/a.parquet"); err != nil || p != "/srv/wh/a.parquet" {
		t.Fatalf("file location: %s %v", p, err)
	}
}

func TestPlanLocalOfAnS3Warehouse(t *testing.T) {
	e := newS3Env(t)
	h := e.ensure(t, loadProfile("power"))
	e.archive(t, h, jan2026, feb2026, quarterHours(0, jan2026, 96))
	e.archive(t, h, feb2026, mar2026, quarterHours(0, feb2026, 96))

	p, err := e.tier.Plan(t.Context(), h, series.Range{From: feb2026, To: mar2026})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Files) != 1 || !strings.HasPrefix(p.Files[0], "s3://") || !p.Watermark.Equal(mar2026) {
		t.Fatalf("plan %+v", p)
	}
	cache := t.TempDir()
	copies := NewCopies(CopyOptions{Dir: cache})
	local, err := p.Local(t.Context(), copies)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(local.Files[0])
	if err != nil || fi.Size() != p.Bytes || filepath.Dir(local.Files[0]) != cache {
		t.Fatalf("copy %s: %v %v, want %d bytes in %s", local.Files[0], fi, err, p.Bytes, cache)
	}
	// A damaged copy is made again.
	if err := os.WriteFile(local.Files[0], []byte("truncated"), 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := p.Local(t.Context(), copies)
	if err != nil || again.Files[0] != local.Files[0] {
		t.Fatalf("again: %v %v", again.Files, err)
	}
	if fi, err := os.Stat(again.Files[0]); err != nil || fi.Size() != p.Bytes {
		t.Fatalf("repaired copy: %v %v", fi, err)
	}
}

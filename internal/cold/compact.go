package cold

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// ErrCompactionConflict is wrapped, together with table.ErrCommitFailed, by
// the refusal of a compaction that another commit overtook between its
// planning and its commit. Nothing of it is left behind; running it again
// plans against the new snapshot.
var ErrCompactionConflict = errors.New("another commit landed while the compaction ran")

// SummaryCompacted is the snapshot summary key of a compaction: the number
// of data files it rewrote.
const SummaryCompacted = "meterstore.compacted-files"

// SummaryResettled is the snapshot summary key of a compaction that
// decided the superseded marks of late corrections: the number of data
// files it re-marked (among the SummaryCompacted ones).
const SummaryResettled = "meterstore.resettled-files"

// Defaults of CompactOptions.
const (
	DefaultSmallFileSize = 128 << 20
	DefaultMinSmallFiles = 2
)

// CompactOptions say which data files Compact rewrites. Zero values mean
// the defaults.
type CompactOptions struct {
	// SmallFileSize: a data file smaller than it is small;
	// DefaultSmallFileSize by default.
	SmallFileSize int64
	// MinSmallFiles: the small files of a partition are rewritten once
	// there are that many of them; DefaultMinSmallFiles by default, and
	// never fewer than 2.
	MinSmallFiles int
	// ManifestsOver and SmallFilesOver, when either is set, make Compact a
	// threshold check: it commits only when the current snapshot has more
	// data manifests than ManifestsOver, or a partition has more small
	// files than SmallFilesOver (a zero threshold is not checked).
	ManifestsOver  int
	SmallFilesOver int
	// ResettleRows bounds the re-marking of late corrections: the files of
	// a month (and identity columns) that holds Open files are rewritten
	// with every reading's superseded mark decided again, so that a
	// resolved read of it is a plain scan once more, if they hold at most
	// that many rows; zero means DefaultResettleRows. KeepOpen turns it
	// off.
	ResettleRows int64
	KeepOpen     bool
	// Settled makes a partition of a settled month, one that ends at or
	// before W so that no archival window writes to it again, due whatever
	// the thresholds once it holds MinSmallFiles small files: its daily
	// files become few large ones for the years it is read. While no
	// threshold is crossed, only such partitions are rewritten.
	Settled bool
}

// due reports whether a table with manifests data manifests and at most
// small small files in any partition crosses o's thresholds; without
// thresholds it always does.
func (o CompactOptions) due(manifests, small int) bool {
	if o.ManifestsOver == 0 && o.SmallFilesOver == 0 {
		return true
	}
	return o.ManifestsOver > 0 && manifests > o.ManifestsOver || o.SmallFilesOver > 0 && small > o.SmallFilesOver
}

// A Compaction reports what Compact did. A Compaction with SnapshotID 0
// committed nothing.
type Compaction struct {
	SnapshotID      int64
	Watermark       time.Time // W, the same before and after
	FilesBefore     int       // data files of the current snapshot
	FilesAfter      int
	ManifestsBefore int // data manifests of the current snapshot
	ManifestsAfter  int
	Partitions      int   // partitions whose files were rewritten
	Rewritten       int   // data files removed
	Resettled       int   // of them, files of months with late corrections, re-marked
	Written         int   // data files added in their place
	Rows            int64 // rows rewritten
	BytesRead       int64 // size of the removed files
	BytesWritten    int64 // size of the added files
	// Rollup is what CompactRollup did with the table's daily rollup, when
	// the caller ran it beside (the store's Compact does).
	Rollup RollupCompaction
}

// Compact rewrites the small data files of t, partition by partition, as
// fewer larger ones, and merges the table's manifests, in one commit that
// carries the current watermark unchanged. Files are merged only within a
// partition (month and superseded mark), and their rows are copied as they
// are, marks included, so readings_versions is unchanged row for row and
// every file keeps its kind (see FileKind). A month that holds late
// corrections (Open files) is rewritten whole instead, its rows marked
// again as an archival marks them, so that its reads need no version
// comparison again (see CompactOptions.ResettleRows).
//
// The commit is pinned to the snapshot Compact planned from: if another
// commit landed meanwhile it is refused with an error wrapping
// ErrCompactionConflict and table.ErrCommitFailed, and the files it wrote
// are deleted. A table with nothing to rewrite and at most one manifest per
// partition spec is left alone, as is one below the thresholds opts sets.
func (c *Tier) Compact(ctx context.Context, t *Table, opts CompactOptions) (Compaction, error) {
	const op = "compact"
	if opts.SmallFileSize < 0 || opts.MinSmallFiles < 0 || opts.ManifestsOver < 0 || opts.SmallFilesOver < 0 || opts.ResettleRows < 0 {
		return Compaction{}, fmt.Errorf("cold: compact %s: negative option", t.decl.Name)
	}
	if opts.SmallFileSize == 0 {
		opts.SmallFileSize = DefaultSmallFileSize
	}
	opts.MinSmallFiles = max(opts.MinSmallFiles, DefaultMinSmallFiles)
	if opts.ResettleRows == 0 {
		opts.ResettleRows = DefaultResettleRows
	}
	ice, err := c.load(ctx, t)
	if err != nil {
		return Compaction{}, err
	}
	snap := ice.CurrentSnapshot()
	w, ok, err := Watermark(ice.Metadata())
	switch {
	case err != nil:
		return Compaction{}, fmt.Errorf("cold: compact %s: %w", t.decl.Name, err)
	case !ok || snap == nil:
		return Compaction{}, nil // nothing archived: nothing to compact
	}
	out := Compaction{Watermark: w}
	if out.ManifestsBefore, err = manifestCount(ctx, ice, snap); err != nil {
		return Compaction{}, fmt.Errorf("cold: compact %s: manifests: %w", t.decl.Name, err)
	}

	scan := ice.Scan(table.WithSnapshotID(snap.SnapshotID), table.WithMaxConcurrency(1), table.WithArrowBatchSize(c.opts.BatchRows))
	defer scan.Close()
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		return Compaction{}, fmt.Errorf("cold: compact %s: plan: %w", t.decl.Name, err)
	}
	g, specs, err := groupFiles(tasks)
	if err != nil {
		return Compaction{}, fmt.Errorf("cold: compact %s: snapshot %d: %w", t.decl.Name, snap.SnapshotID, err)
	}
	out.FilesBefore = g.files
	var settle []iceberg.DataFile
	if !opts.KeepOpen {
		settle = settleUnits(t, ice, g, opts.ResettleRows)
		g.drop(settle)
	}
	replace, read, most := g.small(opts)
	due := opts.due(out.ManifestsBefore, most)
	if !due && opts.Settled {
		replace, read = settledOnly(replace, read, w)
		settle = slices.DeleteFunc(settle, func(f iceberg.DataFile) bool { return !settledMonth(f, w) })
		due = len(replace)+len(settle) > 0
	}
	if len(replace)+len(settle) == 0 && out.ManifestsBefore <= specs || !due {
		out.FilesAfter, out.ManifestsAfter = out.FilesBefore, out.ManifestsBefore
		return out, nil
	}
	out.Resettled = len(settle)
	replace = append(replace, settle...)
	out.Partitions = g.partitions(replace)
	for _, f := range replace {
		out.BytesRead += f.FileSizeBytes()
	}
	out.Rewritten = len(replace)
	if err := checkRewrite(ctx, t, ice, snap, replace); err != nil {
		return Compaction{}, fmt.Errorf("cold: compact %s: %w", t.decl.Name, err)
	}

	wr := write{
		op:      op,
		replace: replace,
		merge:   true,
		pin:     true, // the rows copied are those of this snapshot only
		summary: iceberg.Properties{
			SummaryWatermark: FormatTime(w),
			SummaryCompacted: strconv.Itoa(len(replace)),
		},
	}
	if len(read) > 0 {
		schema, batches, err := scan.ReadTasks(ctx, read)
		if err != nil {
			return Compaction{}, fmt.Errorf("cold: compact %s: read: %w", t.decl.Name, err)
		}
		wr.records = append(wr.records, &records{schema: schema, batches: batches})
	}
	if len(settle) > 0 {
		wr.summary[SummaryResettled] = strconv.Itoa(len(settle))
		r, err := c.resettled(ctx, t, ice, scan, g.tasksOf(settle))
		if err != nil {
			return Compaction{}, fmt.Errorf("cold: compact %s: re-mark late corrections: %w", t.decl.Name, err)
		}
		wr.records = append(wr.records, r)
	}
	done, err := c.commit(ctx, t, ice, wr)
	if errors.Is(err, table.ErrCommitFailed) {
		err = fmt.Errorf("%w: %w", ErrCompactionConflict, err)
	}
	if err != nil {
		return Compaction{}, err
	}
	out.SnapshotID, out.Written, out.Rows, out.BytesWritten = done.SnapshotID, done.Files, done.Rows, done.Bytes
	out.FilesAfter = out.FilesBefore - out.Rewritten + out.Written
	after, err := c.load(ctx, t)
	if err == nil {
		if s := after.Metadata().SnapshotByID(done.SnapshotID); s != nil {
			out.ManifestsAfter, err = manifestCount(ctx, after, s)
		}
	}
	if err != nil {
		// The compaction landed; only its report is incomplete.
		c.log.Warn("cold: counting the manifests after a compaction", "table", t.decl.Name, "err", err)
		out.ManifestsAfter = -1
	}
	c.log.Info("cold: compacted", "table", t.decl.Name, "snapshot", out.SnapshotID,
		"files_before", out.FilesBefore, "files_after", out.FilesAfter,
		"manifests_before", out.ManifestsBefore, "manifests_after", out.ManifestsAfter, "rows", out.Rows)
	return out, nil
}

// monthField is the partition field id of from_month (see partitionSpec).
const monthField = 1000

// settledMonth reports whether f lies in a month partition that ends at or
// before w: no archival window writes to it again.
func settledMonth(f iceberg.DataFile, w time.Time) bool {
	var m int64
	switch v := f.Partition()[monthField].(type) {
	case int32:
		m = int64(v)
	case int64:
		m = v
	case int:
		m = int64(v)
	default:
		return false
	}
	end := time.Date(1970, time.January+time.Month(m+1), 1, 0, 0, 0, 0, time.UTC)
	return !end.After(w)
}

// settledOnly keeps the files and tasks of settled months.
func settledOnly(files []iceberg.DataFile, tasks []table.FileScanTask, w time.Time) ([]iceberg.DataFile, []table.FileScanTask) {
	files = slices.DeleteFunc(files, func(f iceberg.DataFile) bool { return !settledMonth(f, w) })
	tasks = slices.DeleteFunc(tasks, func(t table.FileScanTask) bool { return !settledMonth(t.File, w) })
	return files, tasks
}

// checkRewrite makes sure that every file a compaction of snapshot snap
// would rewrite is the file its commit recorded, by its digest or, for a
// file without one, by its size and footer: the rewritten rows get a fresh
// digest, which must not vouch for an altered file's.
func checkRewrite(ctx context.Context, t *Table, ice *table.Table, snap *table.Snapshot, files []iceberg.DataFile) error {
	fsys, err := ice.FS(ctx)
	if err != nil {
		return fmt.Errorf("file IO: %w", err)
	}
	d, err := readDigests(fsys, ice.Metadata(), snap)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		var err error
		if want, ok := d.of(f.FilePath()); ok {
			err = checkDigest(fsys, t.decl.Name, f.FilePath(), want)
		} else {
			err = checkFile(fsys, t.decl.Name, f)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// A fileGroups holds the data files of a snapshot by partition, with the
// scan tasks that read each.
type fileGroups struct {
	files int
	order []string                      // partition keys, first seen first
	parts map[string][]iceberg.DataFile // by partition key
	tasks map[string][]table.FileScanTask
	key   map[string]string // partition key by file path
}

// groupFiles groups the files of tasks by partition spec and partition
// value, and returns the number of partition specs among them. A file
// with delete files is refused: the Tier's tables have none.
func groupFiles(tasks []table.FileScanTask) (*fileGroups, int, error) {
	g := &fileGroups{parts: map[string][]iceberg.DataFile{}, tasks: map[string][]table.FileScanTask{}, key: map[string]string{}}
	specs := map[int32]bool{}
	for _, task := range tasks {
		if n := len(task.DeleteFiles) + len(task.EqualityDeleteFiles) + len(task.DeletionVectorFiles); n > 0 {
			return nil, 0, fmt.Errorf("%w (data file %s has %d)", ErrDeleteFiles, task.File.FilePath(), n)
		}
		f := task.File
		path := f.FilePath()
		// A large file is planned as several tasks, one per split.
		if _, seen := g.tasks[path]; !seen {
			k := partitionKey(f)
			if _, ok := g.parts[k]; !ok {
				g.order = append(g.order, k)
			}
			g.parts[k] = append(g.parts[k], f)
			g.key[path] = k
			g.files++
			specs[f.SpecID()] = true
		}
		g.tasks[path] = append(g.tasks[path], task)
	}
	return g, max(len(specs), 1), nil
}

// small returns the small files of every partition that has enough of
// them, the scan tasks that read those files, partition by partition, and
// the most small files a partition has.
func (g *fileGroups) small(opts CompactOptions) (files []iceberg.DataFile, tasks []table.FileScanTask, most int) {
	for _, k := range g.order {
		var picked []iceberg.DataFile
		for _, f := range g.parts[k] {
			if f.FileSizeBytes() < opts.SmallFileSize {
				picked = append(picked, f)
			}
		}
		most = max(most, len(picked))
		if len(picked) < opts.MinSmallFiles {
			continue
		}
		files = append(files, picked...)
		for _, f := range picked {
			tasks = append(tasks, g.tasks[f.FilePath()]...)
		}
	}
	return files, tasks, most
}

// drop takes files out of their partitions, so that small passes them
// over.
func (g *fileGroups) drop(files []iceberg.DataFile) {
	gone := map[string]bool{}
	for _, f := range files {
		gone[f.FilePath()] = true
	}
	for k, fs := range g.parts {
		g.parts[k] = slices.DeleteFunc(fs, func(f iceberg.DataFile) bool { return gone[f.FilePath()] })
	}
}

// tasksOf returns the scan tasks that read files.
func (g *fileGroups) tasksOf(files []iceberg.DataFile) []table.FileScanTask {
	var out []table.FileScanTask
	for _, f := range files {
		out = append(out, g.tasks[f.FilePath()]...)
	}
	return out
}

// partitions returns the number of partitions files fall in.
func (g *fileGroups) partitions(files []iceberg.DataFile) int {
	seen := map[string]bool{}
	for _, f := range files {
		seen[g.key[f.FilePath()]] = true
	}
	return len(seen)
}

// partitionKey names the partition of f: its spec and its partition
// values, a null one included, by partition field id.
func partitionKey(f iceberg.DataFile) string {
	var b strings.Builder
	fmt.Fprintf(&b, "spec=%d", f.SpecID())
	p := f.Partition()
	for _, id := range slices.Sorted(maps.Keys(p)) {
		fmt.Fprintf(&b, "/%d=%#v", id, p[id])
	}
	return b.String()
}

package cold

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/series"
)

// ErrDeleteFiles is wrapped by the refusal to plan a table whose snapshot
// has delete files. The Tier's tables are append-only; deletes committed by
// a foreign engine are not supported, since a reader that ignored them would
// return rows that engine deleted.
var ErrDeleteFiles = errors.New("the table has delete files, which are not supported: its tables are append-only")

// A Plan is what a query reads of a cold table: the data files of one
// snapshot that may hold readings of a range, and that snapshot's
// watermark. Files of one snapshot and its watermark always agree.
type Plan struct {
	SnapshotID int64 // the planned snapshot; 0 if the table has none
	// Committed is when the snapshot was committed: its SummaryKnownAt
	// or, in a snapshot without it (a foreign engine's), the end of the
	// millisecond of its Iceberg timestamp.
	Committed    time.Time
	Watermark    time.Time // W of that snapshot, the ancestors' if it carries none
	HasWatermark bool      // false: nothing archived yet
	// Files are the data files, each once, as Iceberg locations
	// (file:///..., s3://...) or, after Local, as local paths.
	Files []string
	// Kinds tells, per file of Files, what its superseded column says
	// of its rows, by the file's metrics.
	Kinds []FileKind
	// Columns tells, per file of Files, the names of the columns it has
	// (of the table's current schema), by its metrics; nil where they do
	// not say. A column added after a file was written is not among its.
	Columns [][]string
	// Versions tells, per file of Files of a rollup's plan, the lowest and
	// highest rollup_version of its rows, by its metrics (which the
	// verification checks against the file's footer).
	Versions []VersionRange
	Bytes    int64 // total size of Files

	table string                                      // the table's name
	index string                                      // the digest index of the snapshot, "" if none
	isum  string                                      // its SHA-256, as the snapshot committed it
	sizes map[string]int64                            // file size by location, from the manifests
	fs    func(context.Context) (icebergio.IO, error) // the table's IO
}

// Plan returns the plan of t for the readings q selects: from in
// [q.From, q.To), a zero bound being open, and the market locations and
// OBIS codes q names, if any. It loads the table's metadata once, so the files and the
// watermark are those of one snapshot, whose chain it proves first (see
// readChain). Files whose statistics exclude the selection are pruned; the
// files returned may still hold readings outside it.
func (c *Tier) Plan(ctx context.Context, t *Table, q series.Range) (Plan, error) {
	ice, err := c.load(ctx, t)
	if err != nil {
		return Plan{}, err
	}
	return c.planOf(ctx, t, ice, ice.CurrentSnapshot(), q)
}

// planOf returns the plan of the readings q selects in snapshot snap of
// ice, which may be nil for a table without snapshots, from the cache if
// it is there.
func (c *Tier) planOf(ctx context.Context, t *Table, ice *table.Table, snap *table.Snapshot, q series.Range) (Plan, error) {
	return c.plans.plan(ice, snap, q, func() (Plan, error) { return c.plan(ctx, t, ice, snap, q) })
}

// plan returns the plan of the readings q selects in snapshot snap of ice.
func (c *Tier) plan(ctx context.Context, t *Table, ice *table.Table, snap *table.Snapshot, q series.Range) (Plan, error) {
	w, ok, err := watermarkFrom(ice.Metadata(), snap)
	if err != nil {
		return Plan{}, fmt.Errorf("cold: plan %s: %w", t.decl.Name, err)
	}
	p := Plan{Watermark: w, HasWatermark: ok, table: t.decl.Name, sizes: map[string]int64{}, fs: ice.FS}
	if snap == nil {
		return p, nil
	}
	p.SnapshotID = snap.SnapshotID
	if p.Committed, err = committed(snap); err != nil {
		return Plan{}, fmt.Errorf("cold: plan %s: %w", t.decl.Name, err)
	}
	ch, err := c.chainOf(ctx, t, ice, snap)
	if err != nil {
		return Plan{}, err
	}
	p.index, p.isum = ch.index.loc, ch.index.sum
	if len(ch.deletes) > 0 {
		return Plan{}, fmt.Errorf("cold: plan %s: snapshot %d: %w (delete file %s)",
			t.decl.Name, snap.SnapshotID, ErrDeleteFiles, ch.deletes[0].FilePath())
	}
	if !q.From.IsZero() && !q.To.IsZero() && !q.From.Before(q.To) {
		return p, nil
	}
	sc := ice.Schema()
	sup := -1
	if f, ok := sc.FindFieldByName(series.ColumnSuperseded); ok {
		sup = f.ID
	}
	ver := -1
	if f, ok := sc.FindFieldByName(rollupVersionColumn); ok {
		ver = f.ID
	}
	keep := pruner(sc, q)
	for _, f := range ch.files {
		if !keep(f) {
			continue
		}
		if f.FileFormat() != iceberg.ParquetFile {
			return Plan{}, fmt.Errorf("cold: plan %s: data file %s is %s, not Parquet", t.decl.Name, f.FilePath(), f.FileFormat())
		}
		p.sizes[f.FilePath()] = f.FileSizeBytes()
		p.Files = append(p.Files, f.FilePath())
		p.Kinds = append(p.Kinds, kindOf(f, sup))
		p.Columns = append(p.Columns, columns(f, sc))
		p.Versions = append(p.Versions, versionsOf(f, ver))
		p.Bytes += f.FileSizeBytes()
	}
	return p, nil
}

// A FileKind says what a data file's superseded column, decided at
// archival, tells of its rows. A settled file (any kind but Open) has the
// column set in every row: its rows marked superseded never win, and its
// others win unless an Open file holds a later version of their merge key.
type FileKind int8

const (
	// Open: a file without the column, or with rows where it is null (late
	// corrections, decided by nobody): its rows are resolved.
	Open FileKind = iota
	// Mixed: settled, with current and superseded rows (written before
	// the column partitioned the table).
	Mixed
	// Current: settled, no row superseded.
	Current
	// Superseded: settled, every row superseded.
	Superseded
)

// kindOf returns the kind of data file f by its metrics of the column with
// id sup (-1: the table has none).
func kindOf(f iceberg.DataFile, sup int) FileKind {
	if sup < 0 {
		return Open
	}
	values, ok := f.ValueCounts()[sup]
	nulls, okNulls := f.NullValueCounts()[sup]
	if !ok || !okNulls || nulls != 0 || values != f.Count() {
		return Open
	}
	lo, okLo := f.LowerBoundValues()[sup]
	hi, okHi := f.UpperBoundValues()[sup]
	switch {
	case okHi && len(hi) == 1 && hi[0] == 0:
		return Current
	case okLo && len(lo) == 1 && lo[0] == 1:
		return Superseded
	}
	return Mixed
}

// rollupVersionColumn is the column of a rollup's rows that orders the
// rows of one series' day: the highest holds.
const rollupVersionColumn = "rollup_version"

// A VersionRange is the lowest and highest rollup_version of a file's
// rows; Known is false where its metrics do not say.
type VersionRange struct {
	Lo, Hi int64
	Known  bool
}

// versionsOf returns the range of the rollup versions of data file f by
// its metrics of the column with id ver (-1: the table has none).
func versionsOf(f iceberg.DataFile, ver int) VersionRange {
	if ver < 0 {
		return VersionRange{}
	}
	nulls, ok := f.NullValueCounts()[ver]
	lo, okLo := f.LowerBoundValues()[ver]
	hi, okHi := f.UpperBoundValues()[ver]
	if !ok || nulls != 0 || !okLo || !okHi || len(lo) != 8 || len(hi) != 8 {
		return VersionRange{}
	}
	return VersionRange{Lo: int64(binary.LittleEndian.Uint64(lo)), Hi: int64(binary.LittleEndian.Uint64(hi)), Known: true}
}

// columns returns the names of the columns of sc that data file f counts
// values of, nil if f has no value counts.
func columns(f iceberg.DataFile, sc *iceberg.Schema) []string {
	counts := f.ValueCounts()
	if len(counts) == 0 {
		return nil
	}
	names := make([]string, 0, len(counts))
	for id := range counts {
		if name, ok := sc.FindColumnName(id); ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// Local returns p with every file a path a local engine can read: a local
// warehouse's files as they are, any other copied into c (see Localize)
// through the table's IO. A copy whose size differs from the manifest's is
// made again. A file whose size still differs from the manifest's, a local
// one included, is not the file its commit recorded: Local refuses the
// plan with an *AlteredFileError naming it, rather than let a query
// answer from it; so does it a file that is gone (Missing). That costs a
// stat per local file.
func (p Plan) Local(ctx context.Context, c *Copies) (Plan, error) {
	var fsys icebergio.IO
	out := p
	out.Files = make([]string, len(p.Files))
	for i, loc := range p.Files {
		size, known := p.sizes[loc]
		if path, ok := localPath(loc); ok {
			if err := p.checkSize(loc, path, size, known); errors.Is(err, fs.ErrNotExist) {
				return Plan{}, missingFile(p.table, loc)
			} else if err != nil {
				return Plan{}, err
			}
			out.Files[i] = path
			continue
		}
		if fsys == nil {
			if p.fs == nil {
				return Plan{}, fmt.Errorf("cold: %s: a plan without the table's IO cannot copy it", loc)
			}
			var err error
			if fsys, err = p.fs(ctx); err != nil {
				return Plan{}, fmt.Errorf("cold: open the IO of %s: %w", loc, err)
			}
		}
		path, err := c.Localize(ctx, fsys, loc)
		if err == nil {
			err = p.checkSize(loc, path, size, known)
			var altered *AlteredFileError
			if errors.As(err, &altered) {
				// Not ours to keep: copy it once more.
				os.Remove(path)
				if path, err = c.Localize(ctx, fsys, loc); err == nil {
					err = p.checkSize(loc, path, size, known)
				}
			}
		}
		if errors.Is(err, fs.ErrNotExist) {
			return Plan{}, missingFile(p.table, loc)
		}
		if err != nil {
			return Plan{}, err
		}
		out.Files[i] = path
	}
	return out, nil
}

// checkSize compares the size of path, the local file or copy of loc, with
// want, the manifest's, if known.
func (p Plan) checkSize(loc, path string, want int64, known bool) error {
	if !known {
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("cold: %w", err)
	}
	if fi.Size() != want {
		return &AlteredFileError{Table: p.table, File: loc, Reason: fmt.Sprintf("it has %d bytes, its manifest records %d", fi.Size(), want)}
	}
	return nil
}

// CheckDigests reads every file of local, which is p made local (see
// Local), whole and compares its SHA-256 with the digest its commit
// recorded; a file without one is passed over. A file that differs is an
// *AlteredFileError naming it, a digest index that is not the one
// committed one naming the index. It reads every file once more.
func (p Plan) CheckDigests(ctx context.Context, local Plan) error {
	if p.index == "" || len(p.Files) == 0 {
		return nil
	}
	if p.fs == nil || len(local.Files) != len(p.Files) {
		return fmt.Errorf("cold: %s: check digests: the plan has no IO, or another local plan", p.table)
	}
	fsys, err := p.fs(ctx)
	if err != nil {
		return fmt.Errorf("cold: open the IO of %s: %w", p.table, err)
	}
	d, err := readDigestIndex(fsys, p.index, p.isum)
	if errors.Is(err, ErrAltered) {
		return &AlteredFileError{Table: p.table, File: p.index, Reason: err.Error(), Metadata: true}
	}
	if err != nil {
		return fmt.Errorf("cold: %s: %w", p.table, err)
	}
	for i, loc := range p.Files {
		want, ok := d.of(loc)
		if !ok {
			continue
		}
		if err := p.checkLocal(ctx, loc, local.Files[i], want); err != nil {
			return err
		}
	}
	return nil
}

func (p Plan) checkLocal(ctx context.Context, loc, path string, want FileDigest) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("cold: %w", err)
	}
	defer f.Close()
	n, sum, err := hashReader(path, ctxReader{ctx, f})
	return compareDigest(p.table, loc, want, n, sum, err)
}

// ctxReader stops a copy when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// localPath returns the local path of a file:// location or an absolute
// path.
func localPath(location string) (string, bool) {
	if filepath.IsAbs(location) {
		return location, true
	}
	u, err := url.Parse(location)
	if err == nil && u.Scheme == "file" && (u.Host == "" || u.Host == "localhost") {
		return u.Path, true
	}
	return "", false
}

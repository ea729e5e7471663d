package cold

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// VerifyOptions say how closely VerifyFiles looks at a table's files.
type VerifyOptions struct {
	// Deep reads every data file whole and compares its SHA-256 with the
	// digest its commit recorded. Without it, only each file's size and
	// Parquet footer are read.
	Deep bool
}

// A FileCheck is what VerifyFiles found of a table's current snapshot.
type FileCheck struct {
	SnapshotID   int64 // 0: the table has no snapshot
	Watermark    time.Time
	HasWatermark bool
	Files        int   // data files the snapshot references
	Bytes        int64 // their total size, as the manifests record it
	// Digested counts the data files with a recorded digest (see
	// SummaryDigests), Undigested those without one: written before the
	// Tier recorded digests (see AdoptDigests), or by a foreign engine.
	Digested, Undigested int
	// Hashed counts the data files whose SHA-256 a deep check compared.
	Hashed int
	// Problems describes each data file that is missing or altered, and a
	// digest index that is gone or altered, in the order of the files'
	// locations.
	Problems []string
	// Altered are the files of Problems that are not the ones committed
	// (a data file of another size, row count or SHA-256 than recorded,
	// a digest index of another SHA-256), each an error wrapping
	// ErrAltered. A missing data file is a Problem only: no read can
	// return its rows.
	Altered []*AlteredFileError
}

// VerifyFiles checks that every data file the current snapshot of t
// references exists through the table's IO with the size and row count its
// manifest records (the latter read from the file's Parquet footer), and,
// with opts.Deep, that its SHA-256 is the digest its commit recorded. A
// query notices a missing file only when it needs it, and an altered one
// of the same size not at all; this looks at all of them.
func (c *Tier) VerifyFiles(ctx context.Context, t *Table, opts VerifyOptions) (FileCheck, error) {
	name := t.decl.Name
	fail := func(err error) (FileCheck, error) { return FileCheck{}, fmt.Errorf("cold: verify %s: %w", name, err) }
	ice, err := c.load(ctx, t)
	if err != nil {
		return FileCheck{}, err
	}
	meta, snap := ice.Metadata(), ice.CurrentSnapshot()
	var out FileCheck
	if out.Watermark, out.HasWatermark, err = watermarkFrom(meta, snap); err != nil {
		return fail(err)
	}
	if snap == nil {
		return out, nil
	}
	out.SnapshotID = snap.SnapshotID
	files, err := liveFiles(ctx, ice, snap)
	if err != nil {
		return fail(err)
	}
	out.Files = len(files)
	for _, f := range files {
		out.Bytes += f.FileSizeBytes()
	}
	fsys, err := ice.FS(ctx)
	if err != nil {
		return fail(fmt.Errorf("open the table's IO: %w", err))
	}
	altered := func(e *AlteredFileError) {
		out.Altered = append(out.Altered, e)
		out.Problems = append(out.Problems, fmt.Sprintf("data file %s of snapshot %d is not the file its commit recorded: %s", e.File, snap.SnapshotID, e.Reason))
	}
	d, err := readDigests(fsys, meta, snap)
	switch {
	case errors.Is(err, ErrAltered) || errors.Is(err, fs.ErrNotExist):
		// Nothing the index says can be trusted, or found: every file
		// counts as without a digest, and the index is reported.
		loc := digestCarrier(meta, snap).Summary.Properties[SummaryDigests]
		e := &AlteredFileError{Table: name, File: loc, Reason: err.Error(), Metadata: true}
		out.Altered = append(out.Altered, e)
		out.Problems = append(out.Problems, fmt.Sprintf("the digest index of snapshot %d is not the one committed: %v", snap.SnapshotID, err))
		d = digests{}
	case err != nil:
		return fail(err)
	}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return FileCheck{}, err
		}
		loc := f.FilePath()
		want, digested := d.of(loc)
		if digested {
			out.Digested++
		} else {
			out.Undigested++
		}
		var err error
		if opts.Deep && digested {
			// The digest proves the whole file, footer included.
			out.Hashed++
			err = checkDigest(fsys, name, loc, want)
		} else {
			err = checkFile(fsys, name, f)
		}
		var ae *AlteredFileError
		switch {
		case err == nil:
		case errors.As(err, &ae):
			altered(ae)
		case errors.Is(err, fs.ErrNotExist):
			out.Problems = append(out.Problems, fmt.Sprintf("data file %s of snapshot %d is missing", loc, snap.SnapshotID))
		default:
			return fail(err)
		}
	}
	return out, nil
}

// checkFile compares the data file f with its manifest entry: its size,
// and the row count and integer column bounds of its Parquet footer (see
// checkBounds). A difference is an *AlteredFileError.
func checkFile(fsys icebergio.IO, name string, f iceberg.DataFile) error {
	loc := f.FilePath()
	r, err := fsys.Open(loc)
	if err != nil {
		return err
	}
	defer r.Close()
	fi, err := r.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", loc, err)
	}
	if fi.Size() != f.FileSizeBytes() {
		return &AlteredFileError{Table: name, File: loc, Reason: fmt.Sprintf("it has %d bytes, its manifest records %d", fi.Size(), f.FileSizeBytes())}
	}
	pr, err := file.NewParquetReader(r)
	if err != nil {
		return &AlteredFileError{Table: name, File: loc, Reason: fmt.Sprintf("its Parquet footer cannot be read: %v", err)}
	}
	if n := pr.NumRows(); n != f.Count() {
		return &AlteredFileError{Table: name, File: loc, Reason: fmt.Sprintf("its footer counts %d rows, its manifest records %d", n, f.Count())}
	}
	if diff := checkBounds(pr.MetaData(), f); diff != "" {
		return &AlteredFileError{Table: name, File: loc, Reason: diff}
	}
	return nil
}

// liveFiles returns the data files of snapshot snap of ice, each once,
// sorted by location.
func liveFiles(ctx context.Context, ice *table.Table, snap *table.Snapshot) ([]iceberg.DataFile, error) {
	s := ice.Scan(table.WithSnapshotID(snap.SnapshotID))
	defer s.Close()
	tasks, err := s.PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan snapshot %d: %w", snap.SnapshotID, err)
	}
	seen := map[string]bool{}
	var out []iceberg.DataFile
	for _, task := range tasks {
		// A large file is planned as several tasks, one per split.
		if p := task.File.FilePath(); !seen[p] {
			seen[p] = true
			out = append(out, task.File)
		}
	}
	slices.SortFunc(out, func(a, b iceberg.DataFile) int { return strings.Compare(a.FilePath(), b.FilePath()) })
	return out, nil
}

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
	// Snapshots counts the snapshots whose chain was checked: every one
	// the metadata keeps. Pinned counts those whose digest index pins
	// them whole (manifest list, manifests, data files).
	Snapshots, Pinned int
	// Digested counts the data files with a recorded digest (see
	// SummaryDigests), Undigested those without one: written before the
	// Tier recorded digests (see AdoptDigests), or by a foreign engine.
	Digested, Undigested int
	// Hashed counts the data files of the current snapshot whose SHA-256
	// a deep check compared, PastHashed those only past snapshots still
	// reference (each once).
	Hashed, PastHashed int
	// Problems describes each data file that is missing or altered, and
	// each manifest list, manifest or digest index that is not the one
	// committed or plans other files than committed, in the order found.
	Problems []string
	// Altered are the files of Problems that are not the ones committed
	// (a data file of another size, row count or SHA-256 than recorded,
	// a digest index, manifest list or manifest of another SHA-256, or
	// that plans other data files), each an error wrapping ErrAltered. A
	// missing data file is one too (see AlteredFileError.Missing).
	Altered []*AlteredFileError
}

// VerifyFiles checks the chain of every snapshot the metadata of t keeps
// (see readChain), read afresh: each manifest list and manifest against
// the digests its commit recorded, and the data files they list against
// the snapshot's digest index and summary. It then checks that every data
// file the current snapshot references exists through the table's IO
// with the size and row count its manifest records (the latter read from
// the file's Parquet footer), and, with opts.Deep, that its SHA-256 is the
// digest its commit recorded, as is that of every file only a past
// snapshot still references. A query notices a missing file only when it
// needs it, and an altered one of the same size not at all; this looks at
// all of them.
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
	fsys, err := ice.FS(ctx)
	if err != nil {
		return fail(fmt.Errorf("open the table's IO: %w", err))
	}
	reported := map[string]bool{}
	altered := func(e *AlteredFileError, problem string) {
		if reported[e.File] {
			return
		}
		reported[e.File] = true
		out.Altered = append(out.Altered, e)
		out.Problems = append(out.Problems, problem)
	}
	var (
		current *chain
		past    = map[string]FileDigest{} // digested files of past snapshots, by path key
		// memo is this check's own: the snapshots share most manifests.
		memo manifestMemo
	)
	for _, s := range meta.Snapshots() {
		if err := ctx.Err(); err != nil {
			return FileCheck{}, err
		}
		ch, err := readChain(ctx, fsys, name, meta, &s, &memo)
		var ae *AlteredFileError
		switch {
		case errors.As(err, &ae):
			altered(ae, fmt.Sprintf("the chain of snapshot %d is not the one committed: %s is not the file its commit recorded: %s", s.SnapshotID, ae.File, ae.Reason))
			continue
		case err != nil:
			return fail(err)
		}
		out.Snapshots++
		if ch.pinned {
			out.Pinned++
		}
		if s.SnapshotID == snap.SnapshotID {
			current = ch
			continue
		}
		for _, f := range ch.files {
			if d, ok := ch.index.of(f.FilePath()); ok {
				past[pathKey(f.FilePath())] = d
			}
		}
	}
	if current == nil {
		// The current snapshot's files cannot be told from its
		// manifests; what they say is read for the data files only, so
		// that those are checked too.
		files, err := liveFiles(ctx, ice, snap)
		if err != nil {
			return out, nil
		}
		current = &chain{files: files}
	}
	out.Files = len(current.files)
	for _, f := range current.files {
		out.Bytes += f.FileSizeBytes()
	}
	d := current.index
	for _, f := range current.files {
		if err := ctx.Err(); err != nil {
			return FileCheck{}, err
		}
		loc := f.FilePath()
		delete(past, pathKey(loc))
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
		if err := c.fileProblem(&out, altered, snap.SnapshotID, name, loc, err); err != nil {
			return fail(err)
		}
	}
	if opts.Deep {
		keys := make([]string, 0, len(past))
		for k := range past {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			want := past[k]
			out.PastHashed++
			err := checkDigest(fsys, name, want.Path, want)
			if err := c.fileProblem(&out, altered, 0, name, want.Path, err); err != nil {
				return fail(err)
			}
		}
	}
	return out, nil
}

// fileProblem records what checking data file loc of snapshot id (0: a
// past one) found, err; an error that is no finding is returned.
func (c *Tier) fileProblem(out *FileCheck, altered func(*AlteredFileError, string), id int64, name, loc string, err error) error {
	of := "of a past snapshot"
	if id != 0 {
		of = fmt.Sprintf("of snapshot %d", id)
	}
	var ae *AlteredFileError
	switch {
	case err == nil:
	case errors.As(err, &ae):
		altered(ae, fmt.Sprintf("data file %s %s is not the file its commit recorded: %s", ae.File, of, ae.Reason))
	case errors.Is(err, fs.ErrNotExist):
		altered(missingFile(name, loc), fmt.Sprintf("data file %s %s is missing", loc, of))
	default:
		return err
	}
	return nil
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

package cold

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/meterstore/meterstore/series"
)

// A FileCheck is what VerifyFiles found of a table's current snapshot.
type FileCheck struct {
	SnapshotID   int64 // 0: the table has no snapshot
	Watermark    time.Time
	HasWatermark bool
	Files        int   // data files the snapshot references
	Bytes        int64 // their total size, as the manifests record it
	// Problems describes each data file that is missing or whose size
	// differs from the manifest's, in the order of the plan.
	Problems []string
}

// VerifyFiles checks that every data file the current snapshot of t
// references exists through the table's IO with the size its manifest
// records. A query notices a missing file only when it needs it; this
// looks at all of them. It reads no file's contents.
func (c *Tier) VerifyFiles(ctx context.Context, t *Table) (FileCheck, error) {
	p, err := c.Plan(ctx, t, series.Range{})
	if err != nil {
		return FileCheck{}, err
	}
	out := FileCheck{SnapshotID: p.SnapshotID, Watermark: p.Watermark, HasWatermark: p.HasWatermark,
		Files: len(p.Files), Bytes: p.Bytes}
	if len(p.Files) == 0 {
		return out, nil
	}
	fsys, err := p.fs(ctx)
	if err != nil {
		return FileCheck{}, fmt.Errorf("cold: verify %s: open the table's IO: %w", t.decl.Name, err)
	}
	for _, loc := range slices.Sorted(slices.Values(p.Files)) {
		if err := ctx.Err(); err != nil {
			return FileCheck{}, err
		}
		want := p.sizes[loc]
		f, err := fsys.Open(loc)
		if errors.Is(err, fs.ErrNotExist) {
			out.Problems = append(out.Problems, fmt.Sprintf("data file %s of snapshot %d is missing", loc, p.SnapshotID))
			continue
		}
		if err != nil {
			return FileCheck{}, fmt.Errorf("cold: verify %s: open %s: %w", t.decl.Name, loc, err)
		}
		fi, err := f.Stat()
		f.Close()
		if err != nil {
			return FileCheck{}, fmt.Errorf("cold: verify %s: stat %s: %w", t.decl.Name, loc, err)
		}
		if fi.Size() != want {
			out.Problems = append(out.Problems, fmt.Sprintf("data file %s of snapshot %d has %d bytes, its manifest records %d",
				loc, p.SnapshotID, fi.Size(), want))
		}
	}
	return out, nil
}

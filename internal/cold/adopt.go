package cold

import (
	"context"
	"fmt"
	"strconv"

	"github.com/apache/iceberg-go"
)

// An Adoption reports what AdoptDigests did. One with SnapshotID 0
// committed nothing: every live file had a digest already.
type Adoption struct {
	SnapshotID int64
	Files      int   // files whose digests it recorded
	Bytes      int64 // their size, read whole to hash them
}

// AdoptDigests records the digests of the live data files of t that have
// none: written before the Tier recorded digests, or by a foreign engine.
// It is how a table archived before then becomes verifiable in full. Each
// such file must first have the size and footer row count its manifest
// records; then it is read whole and its digest committed, marked Adopted,
// in one snapshot that changes no data and carries the watermark unchanged.
// A digest adopted vouches for a file as it is now, not as it was
// written: run it right after an upgrade, and `verify` before.
//
// The commit is pinned to the snapshot it read; one that lands meanwhile
// refuses it, and running it again reads the new one.
func (c *Tier) AdoptDigests(ctx context.Context, t *Table) (Adoption, error) {
	const op = "adopt digests of"
	fail := func(err error) (Adoption, error) {
		return Adoption{}, fmt.Errorf("cold: %s %s: %w", op, t.decl.Name, err)
	}
	ice, err := c.load(ctx, t)
	if err != nil {
		return Adoption{}, err
	}
	snap := ice.CurrentSnapshot()
	if snap == nil {
		return Adoption{}, nil
	}
	w, hasW, err := Watermark(ice.Metadata())
	if err != nil {
		return fail(err)
	}
	files, err := liveFiles(ctx, ice, snap)
	if err != nil {
		return fail(err)
	}
	fsys, err := ice.FS(ctx)
	if err != nil {
		return fail(fmt.Errorf("file IO: %w", err))
	}
	d, err := readDigests(fsys, ice.Metadata(), snap)
	if err != nil {
		return fail(err)
	}
	var (
		out   Adoption
		adopt []FileDigest
	)
	for _, f := range files {
		if _, ok := d.of(f.FilePath()); ok {
			continue
		}
		if err := checkFile(fsys, t.decl.Name, f); err != nil {
			return fail(err)
		}
		size, sum, err := hashFile(fsys, f.FilePath())
		if err != nil {
			return fail(err)
		}
		if size != f.FileSizeBytes() {
			return fail(&AlteredFileError{Table: t.decl.Name, File: f.FilePath(),
				Reason: fmt.Sprintf("it had %d bytes when read whole, its manifest records %d", size, f.FileSizeBytes())})
		}
		adopt = append(adopt, FileDigest{Path: f.FilePath(), Size: size, SHA256: sum, Records: f.Count(), Adopted: true})
		out.Bytes += size
	}
	if len(adopt) == 0 {
		return Adoption{}, nil
	}
	summary := iceberg.Properties{SummaryDigestsAdopted: strconv.Itoa(len(adopt))}
	if hasW {
		summary[SummaryWatermark] = FormatTime(w)
	}
	done, err := c.commit(ctx, t, ice, write{op: op, adopt: adopt, summary: summary, pin: true})
	if err != nil {
		return Adoption{}, err
	}
	out.SnapshotID, out.Files = done.SnapshotID, len(adopt)
	c.log.Info("cold: digests adopted", "table", t.decl.Name, "snapshot", out.SnapshotID, "files", out.Files, "bytes", out.Bytes)
	return out, nil
}

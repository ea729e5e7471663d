package cold

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/catalog"
)

// OrphanOptions say which files Orphans takes for orphans and whether it
// deletes them.
type OrphanOptions struct {
	// Before is the safety line: a file last modified at or after it is
	// kept, referenced or not, for it may belong to a commit still under
	// way. It must lie further back than the longest commit takes; it is
	// required.
	Before time.Time
	// Delete deletes the orphans found; without it they are only listed.
	Delete bool
}

// An OrphanFile is a file under a table's location that nothing keeps.
type OrphanFile struct {
	Location string
	Size     int64
	ModTime  time.Time
}

// A KeptFile is a file under a table's location that Orphans keeps, and
// why.
type KeptFile struct {
	OrphanFile
	// Why says what keeps it: one of the Kept* reasons.
	Why string
}

// The reasons a file is kept (KeptFile.Why).
const (
	KeptReferenced = "referenced by the current metadata: a snapshot's, or its metadata log"
	KeptLog        = "a metadata file the catalog's history names"
	KeptMirror     = "the catalog's Hadoop-layout mirror"
	KeptMovedAside = "a foreign commit moved aside, or a file it references (verify --resolve-forks)"
	KeptYoung      = "modified after the safety line: it may belong to a commit under way"
)

// An OrphanReport says what Orphans found under a table's location.
type OrphanReport struct {
	// Orphans are the files no metadata references, older than the
	// safety line, by location.
	Orphans []OrphanFile
	// Deleted counts the orphans deleted (or found gone meanwhile), and
	// DeletedBytes their size.
	Deleted      int
	DeletedBytes int64
	// Young counts the unreferenced files kept for being newer than the
	// safety line, and YoungFiles are they: a commit under way, or
	// orphans once they are older.
	Young      int
	YoungFiles []OrphanFile
	// Live counts the files kept for being referenced, or the catalog's.
	Live int
	// Kept are the files kept, young and live, by location, each with
	// the reason.
	Kept []KeptFile
}

// Bytes returns the size of the orphans.
func (r OrphanReport) Bytes() int64 {
	var n int64
	for _, o := range r.Orphans {
		n += o.Size
	}
	return n
}

// Orphans lists the files under t's location that nothing keeps and that
// are older than opts.Before, and deletes them with opts.Delete: the
// metadata file of a commit that lost, the files of an archival or a
// foreign write that failed, the manifest lists and metadata files that
// snapshot expiry leaves.
//
// Kept is everything the current metadata references for any snapshot it
// still holds (manifest lists, manifests, data and delete files,
// statistics), the metadata files of its metadata log, and, on the
// meterstore catalog, every metadata file its log still names, the
// Hadoop-layout mirror, and the foreign commits moved aside with what they
// reference. A table whose mirror holds an unresolved foreign commit is
// refused, as is a table whose location is not named after it, which
// others may share.
//
// The files are listed before the metadata is read: a file not referenced
// by metadata read after the listing and older than the safety line
// belongs to no commit still under way, provided commits take less time
// than that.
func (c *Tier) Orphans(ctx context.Context, t *Table, opts OrphanOptions) (OrphanReport, error) {
	name := t.decl.Name
	fail := func(err error) (OrphanReport, error) {
		return OrphanReport{}, fmt.Errorf("cold: orphan files of %s: %w", name, err)
	}
	if opts.Before.IsZero() {
		return fail(errors.New("no safety line"))
	}
	ice, err := c.load(ctx, t)
	if err != nil {
		return OrphanReport{}, err
	}
	loc := strings.TrimSuffix(ice.Location(), "/")
	if !ownLocation(loc, t.ident[len(t.ident)-1]) { // a rollup's name says its namespace too
		return fail(fmt.Errorf("location %s is not named after the table, so other tables' files may lie under it", loc))
	}
	fs, err := ice.FS(ctx)
	if err != nil {
		return fail(fmt.Errorf("file IO: %w", err))
	}
	lister, ok := fs.(icebergio.ListableIO)
	if !ok {
		return fail(fmt.Errorf("the file IO of %s cannot list", loc))
	}
	files, err := listFiles(lister, loc)
	if err != nil {
		return fail(err)
	}
	if ice, err = c.load(ctx, t); err != nil {
		return OrphanReport{}, err
	}
	if l := strings.TrimSuffix(ice.Location(), "/"); l != loc {
		return fail(fmt.Errorf("the table moved from %s to %s meanwhile", loc, l))
	}
	keep, err := c.kept(ctx, t, ice, fs, loc, files)
	if err != nil {
		return fail(err)
	}
	var out OrphanReport
	root := pathKey(loc) + "/"
	for _, f := range files {
		rel := strings.TrimPrefix(f.key, root)
		file := OrphanFile{Location: f.loc, Size: f.size, ModTime: f.mod}
		if why := keepReason(rel, f.key, keep); why != "" {
			out.Live++
			out.Kept = append(out.Kept, KeptFile{file, why})
			continue
		}
		if !f.mod.Before(opts.Before) {
			out.Young++
			out.YoungFiles = append(out.YoungFiles, file)
			out.Kept = append(out.Kept, KeptFile{file, KeptYoung})
			continue
		}
		out.Orphans = append(out.Orphans, file)
	}
	if !opts.Delete {
		return out, nil
	}
	var errs []error
	for _, o := range out.Orphans {
		if err := fs.Remove(o.Location); err != nil && !errors.Is(err, iofs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		out.Deleted++
		out.DeletedBytes += o.Size
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("cold: orphan files of %s: %d of %d not deleted: %w", name, len(errs), len(out.Orphans), errors.Join(errs...))
	}
	c.log.Info("cold: orphan files deleted", "table", name, "files", out.Deleted, "bytes", out.Bytes())
	return out, nil
}

// kept returns the path keys (see pathKey) of the files under loc that must
// stay because something references them, each with the reason (Kept*).
func (c *Tier) kept(ctx context.Context, t *Table, ice *table.Table, fs icebergio.IO, loc string, files []listedFile) (map[string]string, error) {
	refs, err := collectReferences(ice.Metadata(), ice.MetadataLocation(), fs, false)
	if err != nil {
		return nil, err
	}
	keep := make(map[string]string)
	for _, f := range refs.all() {
		keep[pathKey(f)] = KeptReferenced
	}
	if cat := catalog.MirrorOf(c.cat); cat != nil {
		// A foreign commit in the mirror references files no log entry
		// does; they are the operator's to judge (verify --resolve-forks).
		if err := cat.VerifyMirror(ctx, t.ident); err != nil {
			return nil, err
		}
		hist, err := cat.History(ctx, t.ident)
		if err != nil {
			return nil, err
		}
		for _, h := range hist {
			if k := pathKey(h.MetadataLocation); h.MetadataLocation != "" && keep[k] == "" {
				keep[k] = KeptLog
			}
		}
	}
	forked := pathKey(loc) + "/metadata/" + catalog.ForkDir + "/"
	for _, f := range files {
		if !strings.HasPrefix(f.key, forked) || strings.HasSuffix(f.key, ".crc") {
			continue
		}
		data, err := readFile(fs, f.loc)
		if err != nil {
			return nil, err
		}
		more, err := forkFiles(f.loc, data, fs)
		if err != nil {
			return nil, fmt.Errorf("a foreign commit moved aside: %w", err)
		}
		for _, m := range more {
			if k := pathKey(m); keep[k] == "" {
				keep[k] = KeptMovedAside
			}
		}
	}
	return keep, nil
}

// mirrorFile matches, relative to a table's location, the files of the
// catalog's Hadoop-layout mirror (see catalog.CheckMirror): metadata/v<N>
// copies, compressed ones a foreign writer made included, and the hint.
var mirrorFile = regexp.MustCompile(`^metadata/(v[0-9]+(\.[a-z0-9]+)?\.metadata\.json|version-hint\.text)$`)

// keepReason returns why the file at rel under the table's location, of
// path key key, stays, or "" if nothing keeps it: it is referenced (the
// reason keep has for it), the mirror's, a foreign commit moved aside, or
// the checksum a Hadoop writer keeps beside a file (.<name>.crc) that
// stays, for that file's reason.
func keepReason(rel, key string, keep map[string]string) string {
	if name := path.Base(key); strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".crc") && len(name) > len(".x.crc") {
		of := path.Join(path.Dir(key), name[1:len(name)-len(".crc")])
		return keepReason(path.Join(path.Dir(rel), path.Base(of)), of, keep)
	}
	switch {
	case keep[key] != "":
		return keep[key]
	case mirrorFile.MatchString(rel):
		return KeptMirror
	case strings.HasPrefix(rel, "metadata/"+catalog.ForkDir+"/"):
		return KeptMovedAside
	}
	return ""
}

// A listedFile is a file found under a table's location.
type listedFile struct {
	loc  string // as the file IO lists it
	key  string // pathKey(loc)
	size int64
	mod  time.Time
}

// listFiles returns every file under loc, sorted by path key.
func listFiles(l icebergio.ListableIO, loc string) ([]listedFile, error) {
	var out []listedFile
	err := l.WalkDir(loc, func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, iofs.ErrNotExist) {
				return nil // gone since it was listed
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, iofs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		out = append(out, listedFile{loc: p, key: pathKey(p), size: info.Size(), mod: info.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", loc, err)
	}
	slices.SortFunc(out, func(a, b listedFile) int { return strings.Compare(a.key, b.key) })
	return out, nil
}

// readFile returns the contents of the file at loc.
func readFile(fs icebergio.IO, loc string) ([]byte, error) {
	if rf, ok := fs.(icebergio.ReadFileIO); ok {
		return rf.ReadFile(loc)
	}
	f, err := fs.Open(loc)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, st.Size())
	if _, err := f.ReadAt(buf, 0); err != nil && st.Size() > 0 {
		return nil, fmt.Errorf("read %s: %w", loc, err)
	}
	return buf, nil
}

package catalog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/blob"
)

// The Hadoop-layout mirror of a table is metadata/v<N>.metadata.json, a
// byte-for-byte copy of the metadata of log entry N-1, and
// metadata/version-hint.text naming the newest N. The log stays the source
// of truth; the mirror only lets readers without a catalog find the table.
// Because the layout is also a Hadoop catalog's, a Hadoop-catalog writer
// (Spark with type=hadoop on the warehouse) can commit into it: a file or a
// hint that no log entry accounts for is a Fork.

// hintName is the Hadoop layout's pointer to the current version.
const hintName = "version-hint.text"

// ForkDir is where ResolveForks moves a foreign mirror file, under the
// table's metadata directory: outside the v<N> names every Hadoop-layout
// reader and writer looks at, and kept for an operator to inspect.
const ForkDir = "forked"

// mirrorName matches a Hadoop-layout metadata file as HadoopTableOperations
// names it, compressed or not: v<N>.metadata.json, v<N>.gz.metadata.json.
var mirrorName = regexp.MustCompile(`^v([0-9]+)(\.[a-z0-9]+)?\.metadata\.json$`)

// A Fork is a commit in a table's metadata mirror that MeterStore did not
// make: a v<N> file that differs from log entry N-1 or lies beyond the
// log's head, or a version hint that names no version MeterStore wrote.
type Fork struct {
	// Table is the table, as namespace.name.
	Table string
	// File is the warehouse key of the foreign file (the hint itself when
	// only the hint was moved).
	File string
	// Version is the N of the foreign v<N> file, or the hint's value.
	Version int64
	// Head is the version of the log's newest commit when it was found.
	Head int64
	// Reason says how the file differs from the log.
	Reason string
	// SnapshotID is the current snapshot of the foreign metadata (0: none
	// or unreadable), and Records the total-records of its summary (-1:
	// unknown), so that an operator sees what the foreign writer added.
	SnapshotID int64
	Records    int64
	// Altered tells that the file is no commit at all but the log's
	// version edited in place: the same commit (its last-updated-ms and
	// metadata log) with other bytes. It is tampering with what readers
	// without a catalog see, not a foreign writer's commit.
	Altered bool
	// Lost tells that the file, beyond the log's head, is a copy of a
	// metadata file this catalog committed (<N>-<uuid>.metadata.json,
	// still in the metadata directory) whose log entry is gone: the log
	// lost its newest entries, as restoring the database that holds it
	// from a backup loses them. Not a foreign commit either.
	Lost bool
}

// String names the file, the reason and what the foreign commit holds.
func (f Fork) String() string {
	s := fmt.Sprintf("%s: %s %s", f.Table, f.File, f.Reason)
	if f.SnapshotID != 0 {
		s += fmt.Sprintf(" (its current snapshot %d", f.SnapshotID)
		if f.Records >= 0 {
			s += fmt.Sprintf(", %d records", f.Records)
		}
		s += ")"
	}
	return s
}

// A ForkError reports the forks found in a table's metadata mirror. While
// a table has one, its commits go on in the log and its mirror is not
// written: the foreign file and the hint are left as they are, until an
// operator resolves them (see ResolveForks).
type ForkError struct {
	Forks []Fork
}

// Error names every foreign file.
func (e *ForkError) Error() string {
	parts := make([]string, len(e.Forks))
	for i, f := range e.Forks {
		parts[i] = f.String()
	}
	return "catalog: a commit MeterStore did not make is in the metadata mirror (mirroring stopped): " + strings.Join(parts, "; ")
}

// CheckMirror looks for a fork in the metadata mirror of ident the cheap
// way: a v<N> file beyond the log's head, and a version hint that is beyond
// the head or names a file that is not MeterStore's. It reads the hint, one
// metadata file and a listing of the v<N> names. Forks are returned as a
// *ForkError; a dropped or absent table has none.
func (c *Catalog) CheckMirror(ctx context.Context, ident table.Identifier) error {
	return c.checkMirror(ctx, ident, false)
}

// VerifyMirror is CheckMirror that also compares every v<N> file the log
// still accounts for with the metadata of log entry N-1. Files of versions
// the log has truncated (all but the newest Options.TableLogKeep at least)
// are not compared.
func (c *Catalog) VerifyMirror(ctx context.Context, ident table.Identifier) error {
	return c.checkMirror(ctx, ident, true)
}

func (c *Catalog) checkMirror(ctx context.Context, ident table.Identifier, deep bool) error {
	forks, err := c.findForks(ctx, ident, deep)
	if err != nil {
		return err
	}
	if len(forks) > 0 {
		return &ForkError{Forks: forks}
	}
	return nil
}

// mirrorDir returns the warehouse key of a table's metadata directory.
func (c *Catalog) mirrorDir(ctx context.Context, ident table.Identifier, h Commit) (string, error) {
	t, err := c.open(ctx, ident, h)
	if err != nil {
		return "", err
	}
	return c.wh.Key(t.Metadata().Location() + "/metadata")
}

// findForks returns the forks in the mirror of ident. The hint and the
// listing are read before the log's head: a MeterStore commit appends to
// the log before it mirrors, so every file MeterStore wrote by then is
// accounted for by the head read after it.
func (c *Catalog) findForks(ctx context.Context, ident table.Identifier, deep bool) ([]Fork, error) {
	ns, name, err := split(ident)
	if err != nil {
		return nil, err
	}
	h, ok, err := c.head(ctx, ns, name)
	if err != nil || !ok || h.Dropped {
		return nil, err
	}
	dir, err := c.mirrorDir(ctx, ident, h)
	if err != nil {
		return nil, fmt.Errorf("catalog: mirror of %s.%s: %w", ns, name, err)
	}
	return c.forksIn(ctx, ident, dir, deep)
}

func (c *Catalog) forksIn(ctx context.Context, ident table.Identifier, dir string, deep bool) ([]Fork, error) {
	ns, name := ident[0], ident[1]
	wrap := func(err error) error { return fmt.Errorf("catalog: mirror of %s.%s: %w", ns, name, err) }
	hintKey := dir + "/" + hintName
	hintData, err := c.wh.Bucket.Get(ctx, hintKey)
	hasHint := err == nil
	if err != nil && !errors.Is(err, blob.ErrNotFound) {
		return nil, wrap(err)
	}
	files, err := c.mirrorFiles(ctx, dir)
	if err != nil {
		return nil, wrap(err)
	}
	h, ok, err := c.head(ctx, ns, name)
	if err != nil || !ok || h.Dropped {
		return nil, err
	}
	head := h.Version()
	tname := ns + "." + name
	var forks []Fork
	foreign := func(key string, version int64, reason string) {
		f := Fork{Table: tname, File: key, Version: version, Head: head, Reason: reason, Records: -1}
		if data, err := c.wh.Bucket.Get(ctx, key); err == nil {
			f.SnapshotID, f.Records = describe(data)
		}
		forks = append(forks, f)
	}
	// ours returns whether the file under key is the mirror of version n,
	// and known=false when the log no longer holds entry n-1. Where the
	// log recorded the metadata's SHA-256, the mirror is compared with it,
	// not with the committed file: an altered committed file is tampering,
	// which VerifyMetadata reports, not a foreign commit in the mirror.
	ours := func(key string, n int64) (same, known bool, err error) {
		cm, found, err := c.version(ctx, ns, name, n)
		if err != nil || !found {
			return false, false, err
		}
		got, err := c.wh.Bucket.Get(ctx, key)
		if errors.Is(err, blob.ErrNotFound) {
			return false, true, nil
		}
		if err != nil {
			return false, false, err
		}
		if cm.Dropped {
			return false, true, nil
		}
		if cm.MetadataSHA256 != "" {
			sum := sha256.Sum256(got)
			return hex.EncodeToString(sum[:]) == cm.MetadataSHA256, true, nil
		}
		want, err := c.commitData(ctx, cm)
		if err != nil {
			return false, false, err
		}
		return bytes.Equal(got, want), true, nil
	}
	for _, f := range files {
		switch {
		case f.version > head:
			if own := c.lostCommit(ctx, dir, f.key, f.version); own != "" {
				forks = append(forks, Fork{Table: tname, File: f.key, Version: f.version, Head: head, Records: -1, Lost: true,
					Reason: fmt.Sprintf("is version %d, beyond the log's head (version %d), and a copy of %s, which this catalog committed: "+
						"the log lost its newest entries, as restoring its database from a backup loses them", f.version, head, own)})
				continue
			}
			foreign(f.key, f.version, fmt.Sprintf("is version %d, beyond the log's head (version %d)", f.version, head))
		case f.plain && deep:
			same, known, err := ours(f.key, f.version)
			if err != nil {
				return nil, wrap(err)
			}
			if known && !same {
				if c.editedCopy(ctx, ns, name, f.key, f.version) {
					forks = append(forks, Fork{Table: tname, File: f.key, Version: f.version, Head: head, Records: -1, Altered: true,
						Reason: fmt.Sprintf("is the log's version %d altered in place: the same commit with other bytes", f.version)})
					continue
				}
				foreign(f.key, f.version, fmt.Sprintf("differs from the log's version %d", f.version))
			}
		case !f.plain:
			// MeterStore never writes a compressed mirror.
			foreign(f.key, f.version, "is a compressed metadata file MeterStore does not write")
		}
	}
	if !hasHint {
		return forks, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(hintData)), 10, 64)
	switch {
	case err != nil || n < 1:
		forks = append(forks, Fork{Table: tname, File: hintKey, Head: head, Records: -1,
			Reason: fmt.Sprintf("holds %q, which is no version", hintData)})
	case n > head:
		if !hasFork(forks, n) {
			forks = append(forks, Fork{Table: tname, File: hintKey, Version: n, Head: head, Records: -1,
				Reason: fmt.Sprintf("names version %d, beyond the log's head (version %d)", n, head)})
		}
	case !hasFork(forks, n):
		key := fmt.Sprintf("%s/v%d.metadata.json", dir, n)
		same, known, err := ours(key, n)
		if err != nil {
			return nil, wrap(err)
		}
		switch {
		case known && !same && missing(ctx, c.wh.Bucket, key):
			forks = append(forks, Fork{Table: tname, File: hintKey, Version: n, Head: head, Records: -1,
				Reason: fmt.Sprintf("names version %d, whose file is missing", n)})
		case known && !same && c.editedCopy(ctx, ns, name, key, n):
			forks = append(forks, Fork{Table: tname, File: key, Version: n, Head: head, Records: -1, Altered: true,
				Reason: fmt.Sprintf("is what %s names, and the log's version %d altered in place: the same commit with other bytes", hintName, n)})
		case known && !same:
			foreign(key, n, fmt.Sprintf("is what %s names, and differs from the log's version %d", hintName, n))
		}
	}
	return forks, nil
}

// editedCopy reports whether the mirror file under key, which differs
// from version n, is that version edited rather than another commit: both
// parse, with the same last-updated-ms and metadata log. Every commit,
// MeterStore's or a foreign writer's, changes the one and extends the
// other.
func (c *Catalog) editedCopy(ctx context.Context, ns, name, key string, n int64) bool {
	want, found, err := c.versionData(ctx, ns, name, n)
	if err != nil || !found || want == nil {
		return false
	}
	got, err := c.wh.Bucket.Get(ctx, key)
	if err != nil {
		return false
	}
	a, err := table.ParseMetadataBytes(want)
	if err != nil {
		return false
	}
	b, err := table.ParseMetadataBytes(got)
	if err != nil {
		return false
	}
	if a.LastUpdatedMillis() != b.LastUpdatedMillis() {
		return false
	}
	la, lb := slices.Collect(a.PreviousFiles()), slices.Collect(b.PreviousFiles())
	return slices.Equal(la, lb)
}

// lostCommit returns the key of the metadata file this catalog wrote for
// version n in dir (commit names it <n, five digits>-<uuid>.metadata.json)
// whose bytes the mirror file under key holds, "" if there is none.
func (c *Catalog) lostCommit(ctx context.Context, dir, key string, n int64) string {
	prefix := fmt.Sprintf("%s/%05d-", dir, n)
	page, err := c.wh.Bucket.List(ctx, prefix, blob.ListOptions{})
	if err != nil {
		return ""
	}
	mirror, err := c.wh.Bucket.Get(ctx, key)
	if err != nil {
		return ""
	}
	for _, o := range page.Objects {
		if !strings.HasSuffix(o.Key, ".metadata.json") || path.Dir(o.Key) != dir {
			continue
		}
		if data, err := c.wh.Bucket.Get(ctx, o.Key); err == nil && bytes.Equal(data, mirror) {
			return o.Key
		}
	}
	return ""
}

func missing(ctx context.Context, b *blob.Bucket, key string) bool {
	_, err := b.Get(ctx, key)
	return errors.Is(err, blob.ErrNotFound)
}

func hasFork(forks []Fork, version int64) bool {
	for _, f := range forks {
		if f.Version == version {
			return true
		}
	}
	return false
}

// describe returns the current snapshot of a metadata file and its
// total-records, as far as they can be read.
func describe(data []byte) (snapshot, records int64) {
	md, err := table.ParseMetadataBytes(data)
	if err != nil || md.CurrentSnapshot() == nil {
		return 0, -1
	}
	s := md.CurrentSnapshot()
	records = -1
	if s.Summary != nil {
		if n, err := strconv.ParseInt(s.Summary.Properties["total-records"], 10, 64); err == nil {
			records = n
		}
	}
	return s.SnapshotID, records
}

type mirrorFile struct {
	key     string
	version int64
	plain   bool // v<N>.metadata.json, the name MeterStore writes
}

// mirrorFiles lists the Hadoop-layout metadata files in dir.
func (c *Catalog) mirrorFiles(ctx context.Context, dir string) ([]mirrorFile, error) {
	var out []mirrorFile
	opts := blob.ListOptions{}
	for range 100_000 { // a bound, far beyond any table's versions
		page, err := c.wh.Bucket.List(ctx, dir+"/v", opts)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Objects {
			base := path.Base(o.Key)
			m := mirrorName.FindStringSubmatch(base)
			if m == nil || path.Dir(o.Key) != dir {
				continue
			}
			n, err := strconv.ParseInt(m[1], 10, 64)
			if err != nil {
				continue
			}
			out = append(out, mirrorFile{key: o.Key, version: n, plain: m[2] == ""})
		}
		if page.Next == "" {
			return out, nil
		}
		opts.StartAfter = page.Next
	}
	return out, nil
}

// version returns log entry n-1 (version n); found is false when the log
// no longer holds it.
func (c *Catalog) version(ctx context.Context, ns, name string, n int64) (Commit, bool, error) {
	es, err := c.log.Scan(ctx, c.tableShard(ns, name), n-1, 1)
	if err != nil {
		return Commit{}, false, err
	}
	if len(es) != 1 || es[0].SeqNo != n-1 {
		return Commit{}, false, nil
	}
	cm, err := decodeCommit(es[0])
	if err != nil {
		return Commit{}, false, err
	}
	return cm, true, nil
}

// versionData returns the metadata of log entry n-1 (version n); found is
// false when the log no longer holds it, and data is nil for a drop.
func (c *Catalog) versionData(ctx context.Context, ns, name string, n int64) (data []byte, found bool, err error) {
	cm, found, err := c.version(ctx, ns, name, n)
	if err != nil || !found || cm.Dropped {
		return nil, found, err
	}
	data, err = c.commitData(ctx, cm)
	return data, err == nil, err
}

// commitData returns the bytes of the metadata file commit cm names; a
// file that is not the one cm recorded is a *MetadataAlteredError.
func (c *Catalog) commitData(ctx context.Context, cm Commit) ([]byte, error) {
	key, err := c.wh.Key(cm.MetadataLocation)
	if err != nil {
		return nil, err
	}
	data, err := c.wh.Bucket.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	if cm.MetadataSHA256 != "" {
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != cm.MetadataSHA256 {
			return nil, &MetadataAlteredError{Location: cm.MetadataLocation, Want: cm.MetadataSHA256, Got: got}
		}
	}
	return data, nil
}

// ResolveForks moves every foreign file that VerifyMirror finds in the
// mirror of ident to metadata/forked/, under its own name and the time of
// the move, then mirrors the log's head again and points the hint at it.
// It returns the forks it moved, for the operator's record: what a foreign
// writer committed is kept there (and its data files where it wrote them),
// never deleted. Rows it added reach MeterStore only by being written
// through MeterStore.
func (c *Catalog) ResolveForks(ctx context.Context, ident table.Identifier) ([]Fork, error) {
	ns, name, err := split(ident)
	if err != nil {
		return nil, err
	}
	h, err := c.current(ctx, ident)
	if err != nil {
		return nil, err
	}
	dir, err := c.mirrorDir(ctx, ident, h)
	if err != nil {
		return nil, fmt.Errorf("catalog: resolve forks of %s.%s: %w", ns, name, err)
	}
	forks, err := c.forksIn(ctx, ident, dir, true)
	if err != nil || len(forks) == 0 {
		return nil, err
	}
	stamp := time.Now().UTC().Format("20060102T150405Z")
	for _, f := range forks {
		if path.Base(f.File) == hintName {
			continue // rewritten below
		}
		data, err := c.wh.Bucket.Get(ctx, f.File)
		if errors.Is(err, blob.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("catalog: resolve forks of %s.%s: %w", ns, name, err)
		}
		aside := fmt.Sprintf("%s/%s/%s-%s", dir, ForkDir, stamp, path.Base(f.File))
		if err := c.wh.Bucket.PutIfAbsent(ctx, aside, data); err != nil {
			return nil, fmt.Errorf("catalog: resolve forks of %s.%s: keep %s: %w", ns, name, f.File, err)
		}
		if err := c.wh.Bucket.Delete(ctx, f.File); err != nil {
			return nil, fmt.Errorf("catalog: resolve forks of %s.%s: move %s aside: %w", ns, name, f.File, err)
		}
		c.logger.Warn("catalog: moved a foreign metadata file aside", "table", ident, "file", f.File,
			"to", aside, "snapshot", f.SnapshotID, "records", f.Records)
		c.dropChecksum(ctx, f.File)
	}
	c.dropChecksum(ctx, dir+"/"+hintName)
	data, found, err := c.versionData(ctx, ns, name, h.Version())
	if err == nil && (!found || data == nil) {
		err = fmt.Errorf("log entry %d holds no metadata", h.Seq)
	}
	if err != nil {
		return forks, fmt.Errorf("catalog: resolve forks of %s.%s: read the head: %w", ns, name, err)
	}
	head := fmt.Sprintf("%s/v%d.metadata.json", dir, h.Version())
	if err := c.wh.Bucket.PutIfAbsent(ctx, head, data); err != nil && !errors.Is(err, blob.ErrExists) {
		return forks, fmt.Errorf("catalog: resolve forks of %s.%s: mirror the head: %w", ns, name, err)
	}
	if err := c.wh.Bucket.Put(ctx, dir+"/"+hintName, []byte(strconv.FormatInt(h.Version(), 10))); err != nil {
		return forks, fmt.Errorf("catalog: resolve forks of %s.%s: version hint: %w", ns, name, err)
	}
	return forks, nil
}

// dropChecksum removes the checksum a Hadoop local filesystem keeps beside
// a file it wrote (.<name>.crc): once the file is moved or rewritten, the
// stale checksum would fail a Hadoop reader's read of the new one.
func (c *Catalog) dropChecksum(ctx context.Context, key string) {
	crc := path.Dir(key) + "/." + path.Base(key) + ".crc"
	if err := c.wh.Bucket.Delete(ctx, crc); err != nil {
		c.logger.Warn("catalog: remove a stale Hadoop checksum", "file", crc, "err", err)
	}
}

// MirrorOf returns the MeterStore catalog behind cat, itself or under a
// Guard, whose mirror CheckMirror can check; nil when cat is another
// catalog, which writes no Hadoop-layout mirror.
func MirrorOf(cat icecatalog.Catalog) *Catalog {
	switch c := cat.(type) {
	case *Catalog:
		return c
	case *guarded:
		return MirrorOf(c.Catalog)
	}
	return nil
}

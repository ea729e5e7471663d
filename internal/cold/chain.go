package cold

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// The chain of a snapshot is every object a read of it depends on, each
// pinned by a digest the commit that wrote it recorded: the catalog's log
// entry pins the metadata file (catalog.Commit.MetadataSHA256), the
// metadata pins the snapshot's digest index (SummaryDigestsSHA256), and a
// format 2 index pins the manifest list, every manifest and every live
// data file. A read plans from the manifests only once they are shown to be
// the committed ones and to list exactly the data files that the index
// names and the snapshot's summary counts; a snapshot pinned less (written
// before format 2, or by a foreign engine) is held to what it does pin.

// Keys of the snapshot summary that Iceberg writers maintain and the chain
// compares with what the manifests list.
const (
	summaryTotalFiles   = "total-data-files"
	summaryTotalRecords = "total-records"
)

// A chain is what readChain proved of one snapshot.
type chain struct {
	snapshot int64
	// files are the live data files the manifests list, each once, sorted
	// by location; deletes the delete files (only a foreign engine writes
	// them).
	files   []iceberg.DataFile
	deletes []iceberg.DataFile
	// index is the digest index the snapshot leads to (see digestCarrier).
	index digests
	// pinned tells that the index pins the snapshot whole, so that the
	// manifest list and every manifest were compared with their digests.
	pinned bool
	// list and manifests are the manifest list and the manifests as read,
	// by path key: the digests a commit on top of the snapshot records of
	// the manifests it keeps.
	list      FileDigest
	manifests map[string]FileDigest
	// proven is when readChain proved it: the wall clock, for the age of
	// a cached proof only.
	proven time.Time

	// listed is set once CheckFiles found every data file of the chain.
	mu     sync.Mutex
	listed bool
}

// records returns the rows of the chain's data files.
func (ch *chain) records() int64 {
	var n int64
	for _, f := range ch.files {
		n += f.Count()
	}
	return n
}

// readChain reads the manifest list and manifests of snap, a snapshot of
// meta, through fsys, comparing each with the digest its commit recorded,
// and the data files they list with the snapshot's digest index and
// summary. What is not the committed object is an *AlteredFileError with
// Metadata set, naming it: none of the table's rows can be vouched for
// while it is. A manifest whose bytes memo decoded before is not decoded
// again; a nil memo decodes every one.
func readChain(ctx context.Context, fsys icebergio.IO, name string, meta table.Metadata, snap *table.Snapshot, memo *manifestMemo) (*chain, error) {
	altered := func(file, format string, args ...any) error {
		return &AlteredFileError{Table: name, File: file, Reason: fmt.Sprintf(format, args...), Metadata: true}
	}
	d, err := readDigests(fsys, meta, snap)
	if errors.Is(err, ErrAltered) || errors.Is(err, fs.ErrNotExist) {
		return nil, altered(digestCarrier(meta, snap).Summary.Properties[SummaryDigests], "%v", err)
	}
	if err != nil {
		return nil, fmt.Errorf("cold: %s: %w", name, err)
	}
	ch := &chain{snapshot: snap.SnapshotID, index: d, pinned: d.pins(snap.SnapshotID), manifests: map[string]FileDigest{}}
	if snap.ManifestList == "" {
		return nil, fmt.Errorf("cold: %s: snapshot %d has no manifest list (format 1 metadata is not supported)", name, snap.SnapshotID)
	}
	data, err := readFile(fsys, snap.ManifestList)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, altered(snap.ManifestList, "the manifest list of snapshot %d is missing", snap.SnapshotID)
	}
	if err != nil {
		return nil, fmt.Errorf("cold: %s: manifest list %s: %w", name, snap.ManifestList, err)
	}
	ch.list = FileDigest{Path: snap.ManifestList, Size: int64(len(data)), SHA256: sha256Hex(data)}
	if ch.pinned {
		if want := *d.list; pathKey(want.Path) != pathKey(snap.ManifestList) {
			return nil, altered(snap.ManifestList, "snapshot %d names this manifest list, its digest index %s pins %s", snap.SnapshotID, d.loc, want.Path)
		} else if diff := differs(ch.list, want); diff != "" {
			return nil, altered(snap.ManifestList, "the manifest list of snapshot %d %s", snap.SnapshotID, diff)
		}
	}
	manifests, err := iceberg.ReadManifestList(bytes.NewReader(data))
	if err != nil {
		return nil, altered(snap.ManifestList, "the manifest list of snapshot %d cannot be read: %v", snap.SnapshotID, err)
	}
	seen := map[string]bool{}
	for _, m := range manifests {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		loc := m.FilePath()
		mdata, err := readFile(fsys, loc)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, altered(loc, "a manifest of snapshot %d is missing", snap.SnapshotID)
		}
		if err != nil {
			return nil, fmt.Errorf("cold: %s: manifest %s: %w", name, loc, err)
		}
		got := FileDigest{Path: loc, Size: int64(len(mdata)), SHA256: sha256Hex(mdata)}
		if got.Size != m.Length() {
			return nil, altered(loc, "a manifest of snapshot %d has %d bytes, its manifest list records %d", snap.SnapshotID, got.Size, m.Length())
		}
		if ch.pinned {
			want, ok := d.manifests[pathKey(loc)]
			if !ok {
				return nil, altered(loc, "snapshot %d lists this manifest, its digest index %s does not pin it", snap.SnapshotID, d.loc)
			}
			if diff := differs(got, want); diff != "" {
				return nil, altered(loc, "a manifest of snapshot %d %s", snap.SnapshotID, diff)
			}
		}
		ch.manifests[pathKey(loc)] = got
		key := memoKey(m, got.SHA256)
		files, ok := memo.get(key)
		if !ok {
			entries, err := iceberg.ReadManifest(m, bytes.NewReader(mdata), true)
			if err != nil {
				return nil, altered(loc, "a manifest of snapshot %d cannot be read: %v", snap.SnapshotID, err)
			}
			files = make([]iceberg.DataFile, len(entries))
			for i, e := range entries {
				files[i] = e.DataFile()
			}
			memo.put(key, files)
		}
		for _, f := range files {
			switch {
			case f.ContentType() != iceberg.EntryContentData:
				ch.deletes = append(ch.deletes, f)
			case !seen[f.FilePath()]:
				seen[f.FilePath()] = true
				ch.files = append(ch.files, f)
			}
		}
	}
	slices.SortFunc(ch.files, func(a, b iceberg.DataFile) int { return strings.Compare(a.FilePath(), b.FilePath()) })
	if err := ch.check(name, meta, snap); err != nil {
		return nil, err
	}
	ch.proven = time.Now()
	return ch, nil
}

// differs says how got differs from want, "" if it does not.
func differs(got, want FileDigest) string {
	switch {
	case got.Size != want.Size:
		return fmt.Sprintf("has %d bytes, its commit recorded %d", got.Size, want.Size)
	case got.SHA256 != want.SHA256:
		return fmt.Sprintf("has SHA-256 %s, its commit recorded %s", got.SHA256, want.SHA256)
	}
	return ""
}

// check compares the data files the manifests list with the snapshot's
// summary and digest index: a manifest list or manifest replaced by
// another, or an entry dropped from one, plans other files than those.
func (ch *chain) check(name string, meta table.Metadata, snap *table.Snapshot) error {
	altered := func(format string, args ...any) error {
		return &AlteredFileError{Table: name, File: snap.ManifestList, Metadata: true,
			Reason: fmt.Sprintf("snapshot %d: ", snap.SnapshotID) + fmt.Sprintf(format, args...)}
	}
	if snap.Summary != nil {
		for _, c := range []struct {
			key  string
			got  int64
			what string
		}{{summaryTotalFiles, int64(len(ch.files)), "data files"}, {summaryTotalRecords, ch.records(), "records"}} {
			v, ok := snap.Summary.Properties[c.key]
			if !ok {
				continue
			}
			want, err := strconv.ParseInt(v, 10, 64)
			if err != nil || want != c.got {
				return altered("the manifests list %d %s, its summary counts %s", c.got, c.what, v)
			}
		}
	}
	d := ch.index
	own := d.loc != "" && digestCarrier(meta, snap) == snap
	if !own {
		// A foreign engine's snapshot may have removed what its
		// ancestor's index names.
		return nil
	}
	live := make(map[string]iceberg.DataFile, len(ch.files))
	for _, f := range ch.files {
		live[pathKey(f.FilePath())] = f
	}
	for k, want := range d.files {
		f, ok := live[k]
		switch {
		case !ok:
			return altered("its digest index %s names data file %s, which no manifest lists", d.loc, want.Path)
		case f.FileSizeBytes() != want.Size:
			return altered("a manifest lists data file %s with %d bytes, its digest index %d", want.Path, f.FileSizeBytes(), want.Size)
		case want.Records != 0 && f.Count() != want.Records:
			return altered("a manifest lists data file %s with %d records, its digest index %d", want.Path, f.Count(), want.Records)
		}
	}
	if ch.pinned {
		for k, f := range live {
			if _, ok := d.files[k]; !ok {
				return altered("a manifest lists data file %s, which its digest index %s does not name", f.FilePath(), d.loc)
			}
		}
	}
	return nil
}

// chainCacheSize bounds the chains a Tier keeps: the current snapshot of
// each table, and a few past ones that reads as of a snapshot ask for.
const chainCacheSize = 64

// chainMaxAge is how long a proof stands before a read proves the chain
// again: how long a long-running process may go on answering from what
// the committed objects said after one of them was altered, before it
// refuses the table. Verify and every commit prove afresh.
const chainMaxAge = 5 * time.Minute

// A chainCache keeps proven chains by table, snapshot and the digest index
// the snapshot names. A snapshot's manifests never change once committed,
// so a chain proven holds what the committed objects say; one altered
// since is found by the next proof (see chainMaxAge), by Verify, and by
// the next commit, which proves the chain it builds on afresh.
type chainCache struct {
	mu     sync.Mutex
	chains map[string]*chain
	order  []string // oldest first
	// inflight dedups concurrent proofs of one chain.
	inflight map[string]*sync.WaitGroup
	// memo keeps the manifests the proofs decoded.
	memo manifestMemo
}

// of returns the chain of snap in meta, read and proven through fsys unless
// it is cached.
func (cc *chainCache) of(ctx context.Context, fsys icebergio.IO, name string, meta table.Metadata, snap *table.Snapshot) (*chain, error) {
	key := chainKey(meta, snap)
	for {
		cc.mu.Lock()
		if ch, ok := cc.chains[key]; ok && time.Since(ch.proven) < chainMaxAge {
			cc.mu.Unlock()
			return ch, nil
		}
		wg, busy := cc.inflight[key]
		if !busy {
			break // with the lock held
		}
		cc.mu.Unlock()
		wg.Wait()
	}
	if cc.inflight == nil {
		cc.inflight = map[string]*sync.WaitGroup{}
	}
	wg := &sync.WaitGroup{}
	wg.Add(1)
	cc.inflight[key] = wg
	cc.mu.Unlock()

	ch, err := readChain(ctx, fsys, name, meta, snap, &cc.memo)

	cc.mu.Lock()
	defer cc.mu.Unlock()
	delete(cc.inflight, key)
	wg.Done()
	if err != nil {
		// Not kept: a failure is proven again by the next read, so that
		// a restored object is seen.
		return nil, err
	}
	cc.keep(key, ch)
	return ch, nil
}

// chainKey names the chain of snap in meta: by table, snapshot, manifest
// list and the digest index the snapshot leads to.
func chainKey(meta table.Metadata, snap *table.Snapshot) string {
	key := fmt.Sprintf("%s|%d|%s", meta.TableUUID(), snap.SnapshotID, snap.ManifestList)
	if c := digestCarrier(meta, snap); c != nil {
		key += "|" + c.Summary.Properties[SummaryDigestsSHA256]
	}
	return key
}

// put keeps ch, proven afresh, as the chain of snap in meta.
func (cc *chainCache) put(meta table.Metadata, snap *table.Snapshot, ch *chain) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.keep(chainKey(meta, snap), ch)
}

// keep keeps ch under key; cc.mu is held.
func (cc *chainCache) keep(key string, ch *chain) {
	if cc.chains == nil {
		cc.chains = map[string]*chain{}
	}
	if _, ok := cc.chains[key]; ok {
		cc.chains[key] = ch
	} else {
		cc.chains[key] = ch
		cc.order = append(cc.order, key)
		if len(cc.order) > chainCacheSize {
			delete(cc.chains, cc.order[0])
			cc.order = cc.order[1:]
		}
	}
}

// chainOf returns the proven chain of snapshot snap of ice.
func (c *Tier) chainOf(ctx context.Context, t *Table, ice *table.Table, snap *table.Snapshot) (*chain, error) {
	fsys, err := ice.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("cold: %s: open the table's IO: %w", t.decl.Name, err)
	}
	return c.chains.of(ctx, fsys, t.decl.Name, ice.Metadata(), snap)
}

// CheckFiles proves the chain of the current snapshot of t (see
// readChain): that its metadata file, digest index, manifest list and
// manifests are the committed ones and list the data files committed. It
// then finds every one of those with the size its manifest records: the files
// under the table's data directory by a listing (a few requests per
// thousand files), any other by itself. A file gone is an
// *AlteredFileError with Missing set, one of another size one without:
// status turns the table unhealthy without waiting for a read to need the
// file, or for a verification.
func (c *Tier) CheckFiles(ctx context.Context, t *Table) error {
	ice, err := c.load(ctx, t)
	if err != nil {
		return err
	}
	snap := ice.CurrentSnapshot()
	if snap == nil {
		return nil
	}
	ch, err := c.chainOf(ctx, t, ice, snap)
	if err != nil {
		return err
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.listed {
		return nil
	}
	fsys, err := ice.FS(ctx)
	if err != nil {
		return fmt.Errorf("cold: %s: open the table's IO: %w", t.decl.Name, err)
	}
	dir := strings.TrimSuffix(ice.Location(), "/") + "/data"
	sizes := map[string]int64{}
	if lister, ok := fsys.(icebergio.ListableIO); ok {
		listed, err := listFiles(lister, dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cold: %s: %w", t.decl.Name, err)
		}
		for _, f := range listed {
			sizes[f.key] = f.size
		}
	}
	under := pathKey(dir) + "/"
	for _, f := range ch.files {
		if err := ctx.Err(); err != nil {
			return err
		}
		k := pathKey(f.FilePath())
		size, ok := sizes[k]
		if !ok && !strings.HasPrefix(k, under) || len(sizes) == 0 {
			// Not under the listing: looked at on its own.
			st, err := statFile(fsys, f.FilePath())
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("cold: %s: %w", t.decl.Name, err)
			}
			size, ok = st, err == nil
		}
		switch {
		case !ok:
			return missingFile(t.decl.Name, f.FilePath())
		case size != f.FileSizeBytes():
			return &AlteredFileError{Table: t.decl.Name, File: f.FilePath(), Reason: fmt.Sprintf("it has %d bytes, its manifest records %d", size, f.FileSizeBytes())}
		}
	}
	ch.listed = true
	return nil
}

// statFile returns the size of the file at loc.
func statFile(fsys icebergio.IO, loc string) (int64, error) {
	f, err := fsys.Open(loc)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// ProveChain proves the chain of the current snapshot of t afresh, not
// from a proof kept (see CheckFiles), and returns the objects it proved:
// the metadata file, as loaded, the digest index, the manifest list and
// the manifests. It is how a finding about one of them is cleared once an
// operator restored it: the caller must prove the metadata file against
// its log entry itself (catalog.Catalog.VerifyMetadata), since a loaded
// metadata file may be one parsed before.
func (c *Tier) ProveChain(ctx context.Context, t *Table) ([]string, error) {
	ice, err := c.load(ctx, t)
	if err != nil {
		return nil, err
	}
	objects := []string{ice.MetadataLocation()}
	snap := ice.CurrentSnapshot()
	if snap == nil {
		return objects, nil
	}
	fsys, err := ice.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("cold: %s: open the table's IO: %w", t.decl.Name, err)
	}
	ch, err := readChain(ctx, fsys, t.decl.Name, ice.Metadata(), snap, &c.chains.memo)
	if err != nil {
		return nil, err
	}
	c.chains.put(ice.Metadata(), snap, ch)
	if ch.index.loc != "" {
		objects = append(objects, ch.index.loc)
	}
	objects = append(objects, ch.list.Path)
	for _, m := range ch.manifests {
		objects = append(objects, m.Path)
	}
	return objects, nil
}

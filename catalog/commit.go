package catalog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"strconv"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/meterstore/meterstore/blob"
	"github.com/meterstore/meterstore/consensus"
)

// CreateTable implements catalog.Catalog. Tables are created in format
// version 2 unless the properties ask otherwise.
func (c *Catalog) CreateTable(ctx context.Context, ident table.Identifier, sc *iceberg.Schema, opts ...icecatalog.CreateTableOpt) (*table.Table, error) {
	ns, name, err := split(ident)
	if err != nil {
		return nil, err
	}
	if err := c.requireNamespace(ctx, ns); err != nil {
		return nil, err
	}
	var cfg icecatalog.CreateTableCfg
	for _, opt := range opts {
		opt(&cfg)
	}
	loc := cfg.Location
	if loc == "" {
		loc = c.tableLocation(ns, name)
	}
	props := iceberg.Properties{table.PropertyFormatVersion: "2"}
	maps.Copy(props, cfg.Properties)
	sort := cfg.SortOrder
	if sort.Fields() == nil && sort.OrderID() == 0 {
		sort = table.UnsortedSortOrder
	}
	md, err := table.NewMetadata(sc, cfg.PartitionSpec, sort, loc, props)
	if err != nil {
		return nil, badRequest{fmt.Errorf("catalog: create %s.%s: %w", ns, name, err)}
	}
	h, ok, err := c.head(ctx, ns, name)
	if err != nil {
		return nil, fmt.Errorf("catalog: create %s.%s: %w", ns, name, err)
	}
	expected := consensus.Empty
	if ok {
		if !h.Dropped {
			return nil, fmt.Errorf("%w: %s.%s", icecatalog.ErrTableAlreadyExists, ns, name)
		}
		expected = h.Seq // a dropped table's name may be taken again
	}
	// Register first: a name registered for a table that never got created
	// is filtered out by ListTables, while the reverse order could leave a
	// table that no listing shows.
	if err := c.register(ctx, ns, name, true); err != nil {
		return nil, err
	}
	if _, _, err := c.commit(ctx, ident, expected, nil, md); err != nil {
		if errors.Is(err, table.ErrCommitFailed) {
			return nil, fmt.Errorf("%w: %s.%s: %w", icecatalog.ErrTableAlreadyExists, ns, name, err)
		}
		return nil, err
	}
	return c.LoadTable(ctx, ident)
}

// CommitTable implements table.CatalogIO: it applies updates to the
// current metadata if requirements hold and appends the result to the log.
// A concurrent commit makes it fail with table.ErrCommitFailed, which
// iceberg-go's commit retries answer by refreshing and replaying.
func (c *Catalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	ns, name, err := split(ident)
	if err != nil {
		return nil, "", err
	}
	h, ok, err := c.head(ctx, ns, name)
	if err != nil {
		return nil, "", fmt.Errorf("catalog: commit %s.%s: %w", ns, name, err)
	}
	var (
		current  table.Metadata
		base     table.Metadata
		baseLoc  string
		expected = consensus.Empty
	)
	if ok {
		expected = h.Seq
	}
	if ok && !h.Dropped {
		t, err := c.open(ctx, ident, h)
		if err != nil {
			return nil, "", err
		}
		current, base, baseLoc = t.Metadata(), t.Metadata(), h.MetadataLocation
	} else {
		if err := c.requireNamespace(ctx, ns); err != nil {
			return nil, "", err
		}
		if base, err = table.NewMetadata(iceberg.NewSchema(0), nil, table.UnsortedSortOrder, "", nil); err != nil {
			return nil, "", err
		}
	}
	for _, r := range reqs {
		if err := r.Validate(current); err != nil {
			return nil, "", fmt.Errorf("%w: %s.%s: %w", table.ErrCommitFailed, ns, name, err)
		}
	}
	next, err := table.UpdateTableMetadata(base, updates, baseLoc)
	if err != nil {
		return nil, "", badRequest{fmt.Errorf("catalog: commit %s.%s: %w", ns, name, err)}
	}
	// A commit that changes nothing appends nothing: building metadata
	// stamps it with the time, which would make every such commit a new
	// version of the table.
	if current != nil && unchanged(current, next) {
		return current, h.MetadataLocation, nil
	}
	if current == nil {
		if err := c.register(ctx, ns, name, true); err != nil {
			return nil, "", err
		}
	}
	loc, _, err := c.commit(ctx, ident, expected, current, next)
	if err != nil {
		return nil, "", err
	}
	return next, loc, nil
}

// commit writes next as a new metadata file and appends its location to
// the table's log at expected+1.
func (c *Catalog) commit(ctx context.Context, ident table.Identifier, expected int64, base, next table.Metadata) (string, int64, error) {
	ns, name := ident[0], ident[1]
	if c.check != nil {
		if err := c.check(ident, base, next); err != nil {
			return "", 0, refused{fmt.Errorf("catalog: commit %s.%s refused: %w", ns, name, err)}
		}
	}
	data, err := json.Marshal(next)
	if err != nil {
		return "", 0, fmt.Errorf("catalog: commit %s.%s: %w", ns, name, err)
	}
	version := expected + 2 // the N of v<N>.metadata.json, from 1
	loc := fmt.Sprintf("%s/metadata/%05d-%s.metadata.json", next.Location(), version, uuid.NewString())
	// A location outside the warehouse, or one no key can name, is the
	// request's fault and found before anything is written: a refusal,
	// not a failure whose outcome a client would have to doubt.
	key, err := c.wh.Key(loc)
	if err != nil {
		return "", 0, badRequest{fmt.Errorf("catalog: commit %s.%s: the table's location: %w", ns, name, err)}
	}
	if err := c.wh.Bucket.PutIfAbsent(ctx, key, data); err != nil {
		err = fmt.Errorf("catalog: commit %s.%s: write metadata: %w", ns, name, err)
		if errors.Is(err, blob.ErrInvalidKey) {
			return "", 0, badRequest{fmt.Errorf("%w (the table's location %q)", err, next.Location())}
		}
		return "", 0, err
	}
	sum := sha256.Sum256(data)
	seq, err := c.append(ctx, c.tableShard(ns, name), expected, Commit{MetadataLocation: loc, MetadataSHA256: hex.EncodeToString(sum[:])})
	if errors.Is(err, errNotWritten) {
		if derr := c.wh.Bucket.Delete(ctx, key); derr != nil {
			c.logger.Warn("catalog: remove the metadata of a lost commit", "key", key, "err", derr)
		}
		return "", 0, fmt.Errorf("catalog: commit %s.%s: %w", ns, name, err)
	}
	if err != nil {
		return "", 0, fmt.Errorf("catalog: commit %s.%s (its metadata %s is kept): %w", ns, name, loc, err)
	}
	c.publish(ctx, ident, seq, data)
	c.trim(ctx, c.tableShard(ns, name), seq)
	return loc, seq, nil
}

// publish mirrors commit seq as metadata/v<N>.metadata.json and points
// metadata/version-hint.text at it, for readers that know no catalog. It
// also repairs the previous version's mirror, which a crash may have
// skipped. Failures are logged, not returned: the commit has happened.
//
// A fork in the mirror (see Fork) stops it: writing v<N> over a foreign
// file, or moving the hint past one, would take a foreign writer's commit
// away from every Hadoop-layout reader without a word. The commit stays in
// the log, which is the table's truth; the mirror resumes once an operator
// has resolved the fork (ResolveForks).
func (c *Catalog) publish(ctx context.Context, ident table.Identifier, seq int64, data []byte) {
	md, err := table.ParseMetadataBytes(data)
	if err != nil {
		c.logger.Warn("catalog: publish", "table", ident, "err", err)
		return
	}
	dir, err := c.wh.Key(md.Location() + "/metadata")
	if err != nil {
		c.logger.Warn("catalog: publish", "table", ident, "err", err)
		return
	}
	version := seq + 1
	forks, err := c.forksIn(ctx, ident, dir, false)
	if err != nil {
		// Unchecked, the mirror could go over a fork; it waits for the
		// next commit instead, which repairs the version it skipped.
		c.logger.Warn("catalog: publish metadata mirror: cannot check it for forks; not mirrored", "table", ident, "version", version, "err", err)
		return
	}
	if len(forks) > 0 {
		c.logForks(ident, version, forks)
		return
	}
	if seq > 0 {
		c.repairMirror(ctx, ident, dir, seq-1)
	}
	mirror := fmt.Sprintf("%s/v%d.metadata.json", dir, version)
	err = c.wh.Bucket.PutIfAbsent(ctx, mirror, data)
	if errors.Is(err, blob.ErrExists) {
		// Ours from an earlier attempt, or a foreign writer's that came
		// first: only the bytes tell.
		old, gerr := c.wh.Bucket.Get(ctx, mirror)
		if gerr == nil && bytes.Equal(old, data) {
			err = nil
		} else {
			f := Fork{Table: ident[0] + "." + ident[1], File: mirror, Version: version, Head: version, Records: -1,
				Reason: fmt.Sprintf("differs from the log's version %d", version)}
			if gerr == nil {
				f.SnapshotID, f.Records = describe(old)
			}
			c.logForks(ident, version, []Fork{f})
			return
		}
	}
	if err != nil {
		c.logger.Warn("catalog: publish metadata mirror", "table", ident, "version", version, "err", err)
		return
	}
	c.pruneMirror(ctx, dir, version)
	// The hint only moves forward: a slow publisher must not point it back.
	hint := dir + "/" + hintName
	if old, err := c.wh.Bucket.Get(ctx, hint); err == nil {
		if n, err := strconv.ParseInt(string(old), 10, 64); err == nil && n >= version {
			return
		}
	}
	if err := c.wh.Bucket.Put(ctx, hint, []byte(strconv.FormatInt(version, 10))); err != nil {
		c.logger.Warn("catalog: publish version hint", "table", ident, "version", version, "err", err)
	}
}

// logForks reports the forks that kept commit version from the mirror.
func (c *Catalog) logForks(ident table.Identifier, version int64, forks []Fork) {
	for _, f := range forks {
		c.logger.Error("catalog: a commit MeterStore did not make is in the metadata mirror; "+
			"the commit is in the log, the mirror of the table stops until an operator resolves it",
			"table", ident, "file", f.File, "reason", f.Reason, "snapshot", f.SnapshotID,
			"records", f.Records, "commit_version", version)
	}
}

func (c *Catalog) repairMirror(ctx context.Context, ident table.Identifier, dir string, seq int64) {
	mirror := fmt.Sprintf("%s/v%d.metadata.json", dir, seq+1)
	if _, err := c.wh.Bucket.Get(ctx, mirror); !errors.Is(err, blob.ErrNotFound) {
		return
	}
	es, err := c.log.Scan(ctx, c.tableShard(ident[0], ident[1]), seq, 1)
	if err != nil || len(es) != 1 || es[0].SeqNo != seq {
		return
	}
	prev, err := decodeCommit(es[0])
	if err != nil || prev.Dropped {
		return
	}
	key, err := c.wh.Key(prev.MetadataLocation)
	if err != nil {
		return
	}
	data, err := c.wh.Bucket.Get(ctx, key)
	if err != nil {
		return
	}
	if err := c.wh.Bucket.PutIfAbsent(ctx, mirror, data); err == nil {
		c.logger.Info("catalog: repaired a skipped metadata mirror", "table", ident, "version", seq+1)
	}
}

// LoadTable implements catalog.Catalog and table.CatalogIO.
func (c *Catalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	h, err := c.current(ctx, ident)
	if err != nil {
		return nil, err
	}
	return c.open(ctx, ident, h)
}

// open returns the table whose metadata file commit cm names, parsed once.
// A file parsed before must still be there with the size it had: a lost or
// overwritten metadata file is read again, and fails the load as it would
// without the cache. A file read whose SHA-256 is not the one cm recorded
// is a *MetadataAlteredError: nothing it says is used.
func (c *Catalog) open(ctx context.Context, ident table.Identifier, cm Commit) (*table.Table, error) {
	loc := cm.MetadataLocation
	fsF := icebergio.LoadFSFunc(c.wh.Props, loc)
	size := sizeOf(ctx, fsF, loc)
	if meta, ok := c.metas.get(loc, size); ok {
		return table.New(ident, meta, loc, fsF, c), nil
	}
	if cm.MetadataSHA256 == "" {
		// Written before the log recorded digests.
		t, err := table.NewFromLocation(ctx, ident, loc, fsF, c)
		if err != nil {
			return nil, fmt.Errorf("catalog: load %s: %w", loc, err)
		}
		if size >= 0 {
			c.metas.put(loc, size, t.Metadata())
		}
		return t, nil
	}
	data, err := readAll(ctx, fsF, loc)
	if err != nil {
		return nil, fmt.Errorf("catalog: load %s: %w", loc, err)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != cm.MetadataSHA256 {
		return nil, &MetadataAlteredError{Location: loc, Want: cm.MetadataSHA256, Got: got}
	}
	meta, err := table.ParseMetadataBytes(data)
	if err != nil {
		return nil, fmt.Errorf("catalog: load %s: %w", loc, err)
	}
	c.metas.put(loc, int64(len(data)), meta)
	return table.New(ident, meta, loc, fsF, c), nil
}

// readAll returns the bytes of the file at loc.
func readAll(ctx context.Context, fsF table.FSysF, loc string) ([]byte, error) {
	fs, err := fsF(ctx)
	if err != nil {
		return nil, err
	}
	f, err := fs.Open(loc)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxMetadataBytes+1))
}

// maxMetadataBytes bounds a metadata file read whole: far beyond what a
// decade of daily commits with snapshot expiry writes.
const maxMetadataBytes = 256 << 20

// sizeOf returns the size of the file at loc, -1 if it cannot be told.
func sizeOf(ctx context.Context, fsF table.FSysF, loc string) int64 {
	fs, err := fsF(ctx)
	if err != nil {
		return -1
	}
	f, err := fs.Open(loc)
	if err != nil {
		return -1
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return -1
	}
	return fi.Size()
}

// CheckTableExists implements catalog.Catalog.
func (c *Catalog) CheckTableExists(ctx context.Context, ident table.Identifier) (bool, error) {
	_, err := c.current(ctx, ident)
	if errors.Is(err, icecatalog.ErrNoSuchTable) {
		return false, nil
	}
	return err == nil, err
}

// DropTable implements catalog.Catalog. The drop is an entry in the
// table's log; files stay where they are (see PurgeTable in the cold tier).
func (c *Catalog) DropTable(ctx context.Context, ident table.Identifier) error {
	h, err := c.current(ctx, ident)
	if err != nil {
		return err
	}
	ns, name := ident[0], ident[1]
	seq, err := c.append(ctx, c.tableShard(ns, name), h.Seq, Commit{Dropped: true})
	if err != nil {
		return fmt.Errorf("catalog: drop %s.%s: %w", ns, name, err)
	}
	c.trim(ctx, c.tableShard(ns, name), seq)
	return c.register(ctx, ns, name, false)
}

// unchanged reports whether next, built from current, differs from it in
// nothing but what every build sets: its last-updated time and the
// metadata log.
func unchanged(current, next table.Metadata) bool {
	if len(current.Snapshots()) != len(next.Snapshots()) || current.LastSequenceNumber() != next.LastSequenceNumber() {
		// A commit of a snapshot, told apart without encoding the
		// metadata twice: most commits are.
		return false
	}
	if next.Equals(current) {
		return true
	}
	var a, b map[string]any
	for _, x := range []struct {
		md  table.Metadata
		out *map[string]any
	}{{current, &a}, {next, &b}} {
		data, err := json.Marshal(x.md)
		if err != nil || json.Unmarshal(data, x.out) != nil {
			return false
		}
		delete(*x.out, "last-updated-ms")
		delete(*x.out, "metadata-log")
	}
	return reflect.DeepEqual(a, b)
}

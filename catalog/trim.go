package catalog

import (
	"context"
	"errors"
	"fmt"

	"github.com/meterstore/meterstore/blob"
)

// DefaultTableLogKeep is how many of a table's newest commits its log keeps
// unless Options say otherwise. Iceberg keeps the locations of the 100
// metadata files before the current one in the metadata itself
// (write.metadata.previous-versions-max), and snapshots live there too, so
// the log needs only a tail: the head for LoadTable and commits, the entry
// before it for the mirror's repair, and recent versions for History,
// LoadTableAt and VerifyMirror. It is small because Head on the
// object-store log lists the whole tail.
const DefaultTableLogKeep = 32

// pruneMirror deletes the mirror's copy of the version mirrorKeep below
// version, once version is mirrored. The copies are of metadata files the
// table keeps under their own names (which the metadata log of later
// versions names), so a Hadoop-layout reader loses nothing it reads; and
// the mirror stays bounded, which keeps the fork check's listing of it,
// paid by every commit, from growing with the table's age. Twice the log's
// tail are kept, so every version the log holds can still be verified
// against its copy. A copy left by a failed deletion stays; it is correct.
func (c *Catalog) pruneMirror(ctx context.Context, dir string, version int64) {
	if c.keep <= 0 {
		return
	}
	old := version - 2*int64(c.keep)
	if old < 1 {
		return
	}
	key := fmt.Sprintf("%s/v%d.metadata.json", dir, old)
	if err := c.wh.Bucket.Delete(ctx, key); err != nil && !errors.Is(err, blob.ErrNotFound) {
		c.logger.Warn("catalog: prune metadata mirror", "file", key, "err", err)
	}
}

// trim truncates a table's log once commit seq has landed, so that the log
// (and with it Head on the object-store log, which lists every entry from
// the cut) stays bounded however old the table is. The commit is durable by
// then: its metadata file was written before the entry that names it.
//
// It truncates every keep/2 commits, at the entry keep below the new one,
// so the log holds between keep and keep+keep/2-1 entries: a batch of
// deletions now and then rather than one per commit. A failed or skipped
// truncation (a crash, a lost race) is caught up by the next one, which
// removes everything below its cut. Failures are logged, not returned: the
// commit has happened.
func (c *Catalog) trim(ctx context.Context, shard string, seq int64) {
	if c.keep <= 0 {
		return
	}
	step := max(int64(c.keep)/2, 1)
	if seq < int64(c.keep) || seq%step != 0 {
		return
	}
	cut := seq - int64(c.keep) + 1
	if _, err := c.log.Truncate(ctx, shard, cut); err != nil {
		c.logger.Warn("catalog: trim table log", "shard", shard, "cut", cut, "err", err)
	}
}

package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/consensus"
)

// Commit is one entry of a table's log: a metadata version, or a drop.
type Commit struct {
	Seq              int64  `json:"-"`
	MetadataLocation string `json:"metadata_location,omitempty"`
	// MetadataSHA256 is the SHA-256 of the metadata file's bytes, in hex:
	// the log vouches for the metadata, whose snapshots vouch for their
	// files (see VerifyMetadata). Empty in entries written before it was
	// recorded.
	MetadataSHA256 string    `json:"metadata_sha256,omitempty"`
	Dropped        bool      `json:"dropped,omitempty"`
	CommittedAt    time.Time `json:"committed_at"`
}

// Version is the N of the v<N>.metadata.json that mirrors this commit.
func (c Commit) Version() int64 { return c.Seq + 1 }

func decodeCommit(e consensus.Entry) (Commit, error) {
	var c Commit
	if err := json.Unmarshal(e.Data, &c); err != nil {
		return Commit{}, fmt.Errorf("%w: log entry %d is no commit: %w", consensus.ErrCorrupt, e.SeqNo, err)
	}
	c.Seq = e.SeqNo
	return c, nil
}

// head returns the table's newest log entry; ok is false for a table that
// was never created. A dropped table has ok and Dropped set.
func (c *Catalog) head(ctx context.Context, ns, name string) (Commit, bool, error) {
	e, ok, err := c.log.Head(ctx, c.tableShard(ns, name))
	if err != nil || !ok {
		return Commit{}, ok, err
	}
	cm, err := decodeCommit(e)
	return cm, err == nil, err
}

// current returns the live head of a table or ErrNoSuchTable.
func (c *Catalog) current(ctx context.Context, ident table.Identifier) (Commit, error) {
	ns, name, err := split(ident)
	if err != nil {
		return Commit{}, err
	}
	h, ok, err := c.head(ctx, ns, name)
	if err != nil {
		return Commit{}, fmt.Errorf("catalog: %s.%s: %w", ns, name, err)
	}
	if !ok || h.Dropped {
		return Commit{}, fmt.Errorf("%w: %s.%s", icecatalog.ErrNoSuchTable, ns, name)
	}
	return h, nil
}

// History returns the table's commits still in its log, oldest first: the
// newest Options.TableLogKeep at least, once there are as many.
func (c *Catalog) History(ctx context.Context, ident table.Identifier) ([]Commit, error) {
	ns, name, err := split(ident)
	if err != nil {
		return nil, err
	}
	var out []Commit
	for from := int64(0); ; {
		es, err := c.log.Scan(ctx, c.tableShard(ns, name), from, 256)
		if err != nil {
			return nil, fmt.Errorf("catalog: history of %s.%s: %w", ns, name, err)
		}
		for _, e := range es {
			cm, err := decodeCommit(e)
			if err != nil {
				return nil, fmt.Errorf("catalog: history of %s.%s: %w", ns, name, err)
			}
			out = append(out, cm)
		}
		if len(es) < 256 {
			return out, nil
		}
		from = es[len(es)-1].SeqNo + 1
	}
}

// LoadTableAt loads the table as of commit seq, which must still be in the
// log (see History); older versions are reached through the snapshots of
// the current metadata.
func (c *Catalog) LoadTableAt(ctx context.Context, ident table.Identifier, seq int64) (*table.Table, error) {
	ns, name, err := split(ident)
	if err != nil {
		return nil, err
	}
	if seq < 0 {
		return nil, fmt.Errorf("catalog: load %s.%s at %d: %w", ns, name, seq, consensus.ErrInvalid)
	}
	es, err := c.log.Scan(ctx, c.tableShard(ns, name), seq, 1)
	if err != nil {
		return nil, fmt.Errorf("catalog: load %s.%s at %d: %w", ns, name, seq, err)
	}
	if len(es) == 0 || es[0].SeqNo != seq {
		return nil, fmt.Errorf("%w: %s.%s has no commit %d in its log", icecatalog.ErrNoSuchTable, ns, name, seq)
	}
	cm, err := decodeCommit(es[0])
	if err != nil {
		return nil, err
	}
	if cm.Dropped {
		return nil, fmt.Errorf("%w: %s.%s was dropped at commit %d", icecatalog.ErrNoSuchTable, ns, name, seq)
	}
	return c.open(ctx, ident, cm)
}

var (
	// errNotWritten marks a commit that certainly did not land, so the
	// files written for it may go.
	errNotWritten = errors.New("nothing was written")
	// errLost marks a commit that another commit beat.
	errLost = fmt.Errorf("%w: another commit came first (%w)", table.ErrCommitFailed, errNotWritten)
)

// badRequest marks a failure caused by what was asked (metadata that cannot
// be built or updates that do not apply), found before anything was written.
// The message is unchanged.
type badRequest struct{ error }

func (e badRequest) Unwrap() error { return e.error }

// refused marks a commit that the CommitCheck refused: nothing was written
// and, since the check runs on every attempt, a retry is refused again
// unless the table changed. The message is unchanged.
type refused struct{ error }

func (e refused) Unwrap() error { return e.error }

// IsBadRequest reports whether err was caused by what was asked (metadata
// that cannot be built, updates that do not apply), found before anything
// was written.
func IsBadRequest(err error) bool {
	var bad badRequest
	return errors.As(err, &bad)
}

// IsRefused reports whether err is a commit the CommitCheck refused:
// nothing was written, and a retry is refused again unless the table
// changed.
func IsRefused(err error) bool {
	var ref refused
	return errors.As(err, &ref)
}

// append appends a commit to the table's log at expected+1. It returns an
// error matching errLost only after a re-read showed that the entry at
// expected+1 is not ours; an outcome it cannot settle is returned as an
// error matching consensus.ErrIndeterminate, and then the caller must keep
// every file the commit may reference.
func (c *Catalog) append(ctx context.Context, shard string, expected int64, cm Commit) (int64, error) {
	cm.CommittedAt = time.Now().UTC()
	data, err := json.Marshal(cm)
	if err != nil {
		return 0, err
	}
	res, err := c.log.CompareAndSet(ctx, shard, expected, data)
	switch {
	case err == nil && res == consensus.Committed:
		return expected + 1, nil
	case consensus.IsRetryable(err):
		// A serialization failure or the like: refresh and retry.
		return 0, fmt.Errorf("%w: %w: %w", table.ErrCommitFailed, errNotWritten, err)
	case err != nil && !consensus.IsIndeterminate(err):
		return 0, fmt.Errorf("%w: %w", errNotWritten, err)
	}
	es, rerr := c.log.Scan(ctx, shard, expected+1, 1)
	switch {
	case rerr != nil && err != nil:
		return 0, fmt.Errorf("%w (re-read failed too: %v)", err, rerr)
	case rerr != nil:
		return 0, errLost // a determinate mismatch needs no re-read to be sure
	case len(es) == 1 && es[0].SeqNo == expected+1 && bytes.Equal(es[0].Data, data):
		return expected + 1, nil
	case len(es) == 1 && es[0].SeqNo == expected+1:
		return 0, errLost
	case err != nil:
		// Nothing at expected+1 yet; a statement still in flight could
		// put ours there later.
		return 0, err
	}
	return 0, errLost
}

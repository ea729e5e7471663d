package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/meterstore/meterstore/internal/cold"
)

// An ArchivalCommit is one commit of a table's cold tier since a time, as
// its snapshot summary records it: when it landed, the watermark after it,
// the window it archived and what it cost.
type ArchivalCommit struct {
	CommittedAt time.Time
	Operation   string
	// Kind names what the commit did: CommitArchival, CommitLate,
	// CommitCompaction, CommitRestamp, or CommitOther (another engine's,
	// or one this version does not know).
	Kind      string
	Watermark time.Time
	// From and To bound the archived window, [From, To); both zero for a
	// commit that archived none (late corrections, a re-stamp).
	From, To time.Time
	// Rows are the readings the window added, LateRows the late
	// corrections below the watermark; -1 when the summary has no count.
	Rows, LateRows int64
	// Duration is how long writing the files took; -1 when the commit
	// predates its recording (cold.SummaryWriteMillis) or wrote no
	// readings.
	Duration time.Duration
	// Compacted is the number of data files a compaction rewrote, -1 for
	// another kind of commit.
	Compacted int64
}

// The kinds of ArchivalCommit.
const (
	CommitArchival   = "archival"         // archived a window and moved the watermark
	CommitLate       = "late corrections" // added late corrections below the watermark
	CommitCompaction = "compaction"       // rewrote small files, the rows unchanged
	CommitRestamp    = "re-stamp"         // re-stamped the watermark onto the current snapshot (before an expiry, or reassert)
	CommitOther      = "other"
)

// commitKind classifies a snapshot by the summary keys its commit wrote.
func commitKind(p map[string]string) string {
	switch {
	case p[cold.SummaryArchivedTo] != "":
		return CommitArchival
	case p[cold.SummaryCompacted] != "":
		return CommitCompaction
	case p[cold.SummaryReasserted] != "":
		return CommitRestamp
	case summaryInt(p[cold.SummaryLateRows]) > 0:
		return CommitLate
	}
	return CommitOther
}

// ArchivalHistory returns the commits of table name's cold tier that
// landed at or after since, oldest first: the archival history that
// survives snapshot expiry, read from the snapshot summaries.
func (s *Store) ArchivalHistory(ctx context.Context, name string, since time.Time) ([]ArchivalCommit, error) {
	_, ct, _, err := s.opened(ctx, name)
	if err != nil {
		return nil, err
	}
	ice, err := s.cold.Iceberg(ctx, ct)
	if err != nil {
		return nil, fmt.Errorf("store: archival history of %s: %w", name, err)
	}
	var out []ArchivalCommit
	for _, sn := range ice.Metadata().Snapshots() {
		at := time.UnixMilli(sn.TimestampMs).UTC()
		if at.Before(since) || sn.Summary == nil {
			continue
		}
		p := sn.Summary.Properties
		c := ArchivalCommit{CommittedAt: at, Operation: string(sn.Summary.Operation), Kind: commitKind(p),
			Rows: summaryInt(p[cold.SummaryRows]), LateRows: summaryInt(p[cold.SummaryLateRows]), Duration: -1,
			Compacted: summaryInt(p[cold.SummaryCompacted])}
		c.Watermark, _ = time.Parse(time.RFC3339Nano, p[cold.SummaryWatermark])
		c.From, _ = time.Parse(time.RFC3339Nano, p[cold.SummaryArchivedFrom])
		c.To, _ = time.Parse(time.RFC3339Nano, p[cold.SummaryArchivedTo])
		if ms := summaryInt(p[cold.SummaryWriteMillis]); ms >= 0 {
			c.Duration = time.Duration(ms) * time.Millisecond
		}
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(a, b ArchivalCommit) int { return a.CommittedAt.Compare(b.CommittedAt) })
	return out, nil
}

// summaryInt parses a count of a snapshot summary; -1 when absent or not
// a number.
func summaryInt(v string) int64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

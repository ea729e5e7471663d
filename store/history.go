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
	Watermark   time.Time
	// From and To bound the archived window, [From, To); both zero for a
	// commit that archived none (late corrections, a re-stamp).
	From, To time.Time
	// Rows are the readings the window added, LateRows the late
	// corrections below the watermark; -1 when the summary has no count.
	Rows, LateRows int64
	// Duration is how long writing the files took; -1 when the commit
	// predates its recording (cold.SummaryWriteMillis).
	Duration time.Duration
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
		c := ArchivalCommit{CommittedAt: at, Operation: string(sn.Summary.Operation),
			Rows: summaryInt(p[cold.SummaryRows]), LateRows: summaryInt(p[cold.SummaryLateRows]), Duration: -1}
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

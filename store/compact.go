package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/metrics"
)

// CompactOptions say which data files Compact rewrites, and, with
// thresholds, when it does anything at all.
type CompactOptions = cold.CompactOptions

// Compaction reports what Compact did with one table.
type Compaction = cold.Compaction

// ErrCompactionConflict is wrapped by the refusal of a compaction that
// another commit overtook; running it again is safe.
var ErrCompactionConflict = cold.ErrCompactionConflict

// Defaults of the maintenance loop's compaction thresholds.
const (
	DefaultCompactManifestsOver  = 16
	DefaultCompactSmallFilesOver = 8
)

// Compact rewrites the small data files of table name's cold tier,
// partition by partition, and merges its manifests, in one commit that
// keeps the watermark and every stored row as they are (see
// cold.Tier.Compact). It runs under the table's archive lease, so no
// archival interleaves with it; while another session holds the lease it
// does nothing and its error wraps ErrLeaseHeld. A late correction that
// commits meanwhile makes it fail with ErrCompactionConflict.
func (s *Store) Compact(ctx context.Context, name string, opts CompactOptions) (Compaction, error) {
	_, ct, _, err := s.opened(ctx, name)
	if err != nil {
		return Compaction{}, err
	}
	var out Compaction
	err = s.arch.WithLease(ctx, name, func(ctx context.Context) error {
		if err := s.vetWatermark(ctx, name, ct); err != nil {
			return err
		}
		out, err = s.cold.Compact(ctx, ct, opts)
		return err
	})
	s.metrics.Compacted(ctx, name, compactionOutcome(out, err), int64(out.Rewritten), out.BytesRead,
		int64(out.Written), out.BytesWritten)
	if err != nil {
		return Compaction{}, fmt.Errorf("store: compact %s: %w", name, err)
	}
	if out.SnapshotID != 0 {
		s.log.Info("store: compacted", "table", name, "files_before", out.FilesBefore, "files_after", out.FilesAfter,
			"manifests_before", out.ManifestsBefore, "manifests_after", out.ManifestsAfter)
	}
	return out, nil
}

// compactionOutcome classifies a compaction as the outcome attribute of
// meterstore.compaction.runs does.
func compactionOutcome(c Compaction, err error) string {
	switch {
	case errors.Is(err, ErrLeaseHeld):
		return metrics.CompactionLeaseContended
	case errors.Is(err, ErrCompactionConflict):
		return metrics.CompactionConflict
	case err != nil:
		return metrics.CompactionFailed
	case c.SnapshotID == 0:
		return metrics.CompactionSkipped
	}
	return metrics.CompactionCompacted
}

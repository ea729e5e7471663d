package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/metrics"
)

// CompactOptions say which data files Compact rewrites, and, with
// thresholds, when it does anything at all. Zero values mean the
// defaults. They are the cold tier's options field for field, so that
// they convert without a copy of their parts.
type CompactOptions struct {
	// SmallFileSize: a data file smaller than it is small; 128 MiB by
	// default.
	SmallFileSize int64
	// MinSmallFiles: the small files of a partition are rewritten once
	// there are that many of them; 2 by default, and never fewer.
	MinSmallFiles int
	// ManifestsOver and SmallFilesOver, when either is set, make Compact a
	// threshold check: it commits only when the current snapshot has more
	// data manifests than ManifestsOver, or a partition has more small
	// files than SmallFilesOver (a zero threshold is not checked).
	ManifestsOver  int
	SmallFilesOver int
	// ResettleRows bounds the re-marking of late corrections: the files of
	// a month (and identity columns) that holds late corrections are
	// rewritten with every reading's superseded mark decided again, so
	// that a resolved read of it is a plain scan once more, if they hold
	// at most that many rows; zero means 250,000. KeepOpen turns it off.
	ResettleRows int64
	KeepOpen     bool
	// Settled makes a partition of a settled month, one that ends at or
	// before W so that no archival window writes to it again, due whatever
	// the thresholds once it holds MinSmallFiles small files: its daily
	// files become few large ones for the years it is read. While no
	// threshold is crossed, only such partitions are rewritten.
	Settled bool
}

// A Compaction reports what Compact did with one table; one with
// SnapshotID 0 committed nothing. It is the cold tier's report field for
// field.
type Compaction struct {
	SnapshotID      int64
	Watermark       time.Time // W, the same before and after
	FilesBefore     int       // data files of the current snapshot
	FilesAfter      int
	ManifestsBefore int // data manifests of the current snapshot
	ManifestsAfter  int
	Partitions      int   // partitions whose files were rewritten
	Rewritten       int   // data files removed
	Resettled       int   // of them, files of months with late corrections, re-marked
	Written         int   // data files added in their place
	Rows            int64 // rows rewritten
	BytesRead       int64 // size of the removed files
	BytesWritten    int64 // size of the added files
	// Rollup is what the compaction did with the table's daily rollup
	// (see cold.Tier.CompactRollup): its files, one an archival cycle,
	// rewritten as one a month of the rows that hold, when a month holds
	// MinSmallFiles of them (more than SmallFilesOver, if set).
	Rollup RollupCompaction
}

// RollupCompaction reports what a compaction did with a table's daily
// rollup; one with SnapshotID 0 committed nothing.
type RollupCompaction = cold.RollupCompaction

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
		c, err := s.cold.Compact(ctx, ct, cold.CompactOptions(opts))
		out = Compaction(c)
		if err != nil {
			return err
		}
		// The rollup is derived: one left uncompacted costs reads, not
		// answers, so its failure is logged, not the compaction's.
		least := max(opts.MinSmallFiles, 2)
		if opts.SmallFilesOver > 0 {
			least = max(least, opts.SmallFilesOver+1) // the loop's threshold
		}
		if out.Rollup, err = s.cold.CompactRollup(ctx, ct, least); err != nil {
			s.log.Warn("store: the daily rollup was not compacted", "table", name, "err", err)
		}
		return nil
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
	if out.Rollup.SnapshotID != 0 {
		s.log.Info("store: compacted the daily rollup", "table", name,
			"files_before", out.Rollup.FilesBefore, "files_after", out.Rollup.FilesAfter)
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

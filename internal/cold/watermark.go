package cold

import (
	"fmt"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/catalog"
)

// Keys of the snapshot summary that the Tier writes. Every commit that moves
// the watermark carries SummaryWatermark with the archived range and row
// count; every commit of the Tier carries SummaryWatermark, so the newest
// snapshot of a table only the Tier writes to always names the boundary.
const (
	SummaryWatermark    = "meterstore.watermark"     // W, RFC 3339 with microseconds, UTC
	SummaryArchivedFrom = "meterstore.archived-from" // start of the archived window
	SummaryArchivedTo   = "meterstore.archived-to"   // end of the archived window, exclusive
	SummaryRows         = "meterstore.rows"          // readings the commit added
	SummaryLateRows     = "meterstore.late-rows"     // late corrections below W the commit added
	// SummaryLateFrom and SummaryLateTo bound the from of the late
	// corrections a commit added, [from, to): the days whose rollup they
	// change (see CatchUpRollup).
	SummaryLateFrom   = "meterstore.late-from"
	SummaryLateTo     = "meterstore.late-to"
	SummaryReasserted = "meterstore.reasserted-from"
	SummaryCommitID   = "meterstore.commit-id" // unique per attempt: tells whether it landed
	// SummaryWriteMillis is how long the commit took to write its data
	// files and stage its snapshot, in milliseconds of the wall clock: the
	// archival's cost per window, which the dashboard plots.
	SummaryWriteMillis = "meterstore.write-ms"
	// SummaryKnownAt is the time, at microseconds, when the commit was
	// staged: a write acknowledged before it has a recorded_at at or
	// before it, one that starts after the commit landed a later one.
	SummaryKnownAt = "meterstore.known-at"
)

// timeLayout is RFC 3339 at microseconds, the precision of Iceberg timestamps.
const timeLayout = "2006-01-02T15:04:05.000000Z07:00"

// FormatTime formats t as the summary stores it: UTC, microseconds.
func FormatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// parseTime parses a summary time; any RFC 3339 spelling is accepted.
func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	return t.UTC(), err
}

// checkPrecision refuses times finer than a microsecond, which the summary
// and the data files cannot represent: a boundary that rounds is a boundary
// that moves.
func checkPrecision(what string, t time.Time) error {
	if !t.Truncate(time.Microsecond).Equal(t) {
		return fmt.Errorf("cold: %s %s is finer than a microsecond", what, t.Format(time.RFC3339Nano))
	}
	return nil
}

// Watermark returns the watermark of meta: the value of SummaryWatermark in
// the current snapshot or, when a foreign engine committed that one, in the
// nearest ancestor carrying it. A table without any has no watermark (ok is
// false). A parent missing from the metadata before one was found is a
// *MissingAncestorError, never a silent epoch.
func Watermark(meta table.Metadata) (w time.Time, ok bool, err error) {
	return watermarkFrom(meta, meta.CurrentSnapshot())
}

// watermarkFrom returns the watermark of snapshot s of meta, found as
// Watermark finds the current one's; s nil has none.
func watermarkFrom(meta table.Metadata, s *table.Snapshot) (w time.Time, ok bool, err error) {
	start := s
	// A parent chain is acyclic; the bound only guards against metadata
	// that says otherwise.
	for range len(meta.Snapshots()) + 1 {
		if s == nil {
			return time.Time{}, false, nil
		}
		if s.Summary != nil {
			if v, found := s.Summary.Properties[SummaryWatermark]; found {
				w, err := parseTime(v)
				if err != nil {
					return time.Time{}, false, fmt.Errorf("cold: snapshot %d: %s %q: %w", s.SnapshotID, SummaryWatermark, v, err)
				}
				return w, true, nil
			}
		}
		if s.ParentSnapshotID == nil {
			return time.Time{}, false, nil
		}
		p := meta.SnapshotByID(*s.ParentSnapshotID)
		if p == nil {
			return time.Time{}, false, &MissingAncestorError{SnapshotID: s.SnapshotID, ParentID: *s.ParentSnapshotID}
		}
		s = p
	}
	return time.Time{}, false, fmt.Errorf("cold: the parent chain of snapshot %d has a cycle", start.SnapshotID)
}

// WatermarkCheck returns the commit check that keeps the watermark from
// moving backwards; install it as catalog.Options.Check. It compares the
// metadata a commit would replace with the metadata it would install, and
// nothing else, so it holds for every attempt, also when iceberg-go refreshes
// a stale commit and replays it. On a table of the Tier (one that has the
// property PropTimeModel) it refuses a commit
//   - after which the watermark is earlier than before, or unreadable, or gone;
//   - whose new snapshot archives a window starting below the watermark before
//     it (a replayed archival of a window another commit archived already);
//   - that removes PropTimeModel, which would end these checks;
//   - on a table whose watermark cannot be read now: nothing can be checked
//     against it, and an operator must restore the history, or commit the
//     right watermark with a tool that bypasses this check, first.
//
// Other tables of the catalog are not the Tier's, and pass unchecked.
func WatermarkCheck() catalog.CommitCheck {
	return func(ident table.Identifier, base, next table.Metadata) error {
		if base == nil || !managed(base) {
			return nil // the commit creates the table, or it is not ours
		}
		if !managed(next) {
			return fmt.Errorf("%w: commit to %v refused: it removes the property %s", ErrWatermarkBackwards, ident, PropTimeModel)
		}
		bw, bok, err := Watermark(base)
		if err != nil {
			return fmt.Errorf("cold: commit to %v refused: the current watermark cannot be checked against: %w", ident, err)
		}
		nw, nok, err := Watermark(next)
		switch {
		case err != nil && bok:
			return fmt.Errorf("%w: commit to %v refused: afterwards it could not be read (%w)", ErrWatermarkBackwards, ident, err)
		case bok && !nok:
			return fmt.Errorf("%w: commit to %v refused: it would remove the watermark %s", ErrWatermarkBackwards, ident, FormatTime(bw))
		case bok && nw.Before(bw):
			return fmt.Errorf("%w: commit to %v refused: from %s to %s", ErrWatermarkBackwards, ident, FormatTime(bw), FormatTime(nw))
		}
		return checkWindow(ident, base, next, bw, bok)
	}
}

// checkWindow refuses a new current snapshot that archives a window
// starting below the base's watermark.
func checkWindow(ident table.Identifier, base, next table.Metadata, bw time.Time, bok bool) error {
	s := next.CurrentSnapshot()
	if !bok || s == nil || s.Summary == nil || base.SnapshotByID(s.SnapshotID) != nil {
		return nil
	}
	v, ok := s.Summary.Properties[SummaryArchivedFrom]
	if !ok {
		return nil
	}
	from, err := parseTime(v)
	if err != nil {
		return fmt.Errorf("cold: commit to %v refused: %s %q: %w", ident, SummaryArchivedFrom, v, err)
	}
	if from.Before(bw) {
		return fmt.Errorf("%w: commit to %v refused: window from %s, watermark %s", ErrWindowArchived, ident, FormatTime(from), FormatTime(bw))
	}
	return nil
}

// managed reports whether meta is a table of the Tier.
func managed(meta table.Metadata) bool {
	_, ok := meta.Properties()[PropTimeModel]
	return ok
}

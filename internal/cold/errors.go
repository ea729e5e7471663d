package cold

import (
	"errors"
	"fmt"

	"github.com/apache/iceberg-go/table"

	"github.com/meterstore/meterstore/series"
)

// ErrWatermarkBackwards is wrapped by the refusal of a commit that would move
// the watermark backwards or leave the table without one.
var ErrWatermarkBackwards = errors.New("the watermark would move backwards")

// ErrWindowArchived is wrapped by the refusal of an archival whose window
// starts below the table's watermark: those rows are in the tier already, and
// archiving them again would store them twice.
var ErrWindowArchived = errors.New("the window starts below the watermark: it is archived already")

// A MissingAncestorError reports that the watermark cannot be read: the walk
// back from the current snapshot reached a parent that the table no longer
// has, typically because a foreign tool expired it, before it found a
// snapshot carrying the watermark.
type MissingAncestorError struct {
	SnapshotID int64 // the snapshot whose parent is missing
	ParentID   int64 // the missing parent
}

// Error names the snapshot and its missing parent.
func (e *MissingAncestorError) Error() string {
	return fmt.Sprintf("cold: watermark unreadable: snapshot %d names parent %d, which the table no longer has (expired by a foreign tool?); "+
		"no snapshot before it carries %s", e.SnapshotID, e.ParentID, SummaryWatermark)
}

// A QuarantineError reports a table whose cold schema cannot take the
// declared rows safely, or cannot be read: series' one rule for both tiers.
type QuarantineError = series.QuarantineError

// IsRetryable reports false: the history stays broken until an operator
// restores it.
func (e *MissingAncestorError) IsRetryable() bool { return false }

// ErrCommitConflict is wrapped by a commit that lost a race to another
// commit of the same table: nothing of it was written, and it may be tried
// again on the new state. It is iceberg-go's table.ErrCommitFailed.
var ErrCommitConflict = table.ErrCommitFailed

// ErrUnreachable is wrapped by the error of every operation that needs the
// cold tier while its warehouse or catalog cannot be reached: a query, a
// late correction, an archival. Whether it is worth retrying is the
// cause's to say: a log that lost entries is not, a warehouse away is.
var ErrUnreachable = errors.New("the cold tier is unreachable")

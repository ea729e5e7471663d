package archive

import (
	"fmt"
	"time"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/series"
)

// An InvariantError reports that something already is true that must not
// be: rows below the watermark still in PostgreSQL, a commit that does not
// hold the rows read, or a catalog whose log shows a lower watermark than
// the archival ledger recorded as committed. No producer can cause it; an
// operator is needed, and the partitions concerned are kept.
type InvariantError struct {
	Table  string
	Reason string
	// Err is the violation as a value, when there is one to inspect, such
	// as a *WatermarkRegression.
	Err error
}

// Error names the table and what is violated.
func (e *InvariantError) Error() string {
	return fmt.Sprintf("archive %s: invariant violated: %s", e.Table, e.Reason)
}

// Unwrap returns the violation as a value, if there is one.
func (e *InvariantError) Unwrap() error { return e.Err }

// IsRetryable reports false: an operator is needed.
func (e *InvariantError) IsRetryable() bool { return false }

// A WatermarkRegression reports that the cold table's watermark, as its
// catalog shows it now, is lower than the highest watermark the archival
// ledger recorded as committed: the catalog's log lost its newest entries
// (or was restored from an older copy). W never moves back, so the log is
// not obeyed: nothing is archived, and nothing answered from the cold tier,
// until an operator restores the lost entries.
type WatermarkRegression struct {
	Table    string
	Expected time.Time // the highest W the ledger recorded
	Found    time.Time // W in the catalog now; zero if HasFound is false
	HasFound bool
}

// Error names the expected and the found watermark.
func (e *WatermarkRegression) Error() string {
	found := "none"
	if e.HasFound {
		found = cold.FormatTime(e.Found)
	}
	return fmt.Sprintf("the watermark of %s went back: the archival ledger records %s as committed, the catalog's log shows %s; "+
		"the log lost its newest entries: restore them, nothing is archived or read from the cold tier until then",
		e.Table, cold.FormatTime(e.Expected), found)
}

// IsRetryable reports false: the log stays short until an operator acts.
func (e *WatermarkRegression) IsRetryable() bool { return false }

// ErrNowOutOfRange is wrapped by the refusal of a now that cannot be the
// time: before the watermark, whose window was archived at least the
// settlement lag after it ended, or (in the store) past the wall clock or
// before 1970. Acting on it would move the watermark or create partitions
// where no reading will ever be, so it is not retryable.
var ErrNowOutOfRange = series.NewSentinel("now out of range", false)

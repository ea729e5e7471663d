package archive

import (
	"fmt"

	"github.com/meterstore/meterstore/series"
)

// An InvariantError reports that something already is true that must not
// be: rows below the watermark still in PostgreSQL, or a commit that does not
// hold the rows read. No producer can cause it; an operator is needed, and
// the partitions concerned are kept.
type InvariantError struct {
	Table  string
	Reason string
}

// Error names the table and what is violated.
func (e *InvariantError) Error() string {
	return fmt.Sprintf("archive %s: invariant violated: %s", e.Table, e.Reason)
}

// IsRetryable reports false: an operator is needed.
func (e *InvariantError) IsRetryable() bool { return false }

// ErrNowOutOfRange is wrapped by the refusal of a now that cannot be the
// time: before the watermark, whose window was archived at least the
// settlement lag after it ended, or (in the store) past the wall clock or
// before 1970. Acting on it would move the watermark or create partitions
// where no reading will ever be, so it is not retryable.
var ErrNowOutOfRange = series.NewSentinel("now out of range", false)

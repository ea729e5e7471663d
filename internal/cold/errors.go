package cold

import (
	"errors"
	"fmt"
	"strings"
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

// A QuarantineError reports that a table stopped archiving because its cold
// schema cannot take the declared rows safely, or cannot be read at all. It
// stays until an operator resolves the drift; the rows stay in PostgreSQL,
// where they can still be corrected.
type QuarantineError struct {
	Table   string
	Reasons []string // one per incompatible change, in schema order
	Err     error    // why the schema could not be read, if that is the reason
}

// Error names the table and why it is quarantined.
func (e *QuarantineError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cold: table %s quarantined: ", e.Table)
	b.WriteString(strings.Join(e.Reasons, "; "))
	if e.Err != nil {
		if len(e.Reasons) > 0 {
			b.WriteString(": ")
		}
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns why the schema could not be read, if that is the reason.
func (e *QuarantineError) Unwrap() error { return e.Err }

// IsRetryable reports false: a quarantine stays until an operator acts.
func (e *QuarantineError) IsRetryable() bool { return false }

// IsRetryable reports false: the history stays broken until an operator
// restores it.
func (e *MissingAncestorError) IsRetryable() bool { return false }

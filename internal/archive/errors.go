package archive

import "fmt"

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

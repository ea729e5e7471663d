package archive

import "time"

// A Status summarizes what a cycle did with a table.
type Status uint8

// The statuses of a cycle. Only Failed and Quarantined need an operator's
// attention; LeaseContended and Deferred are benign no-ops.
const (
	// NothingDue means no window was due and nothing was archived.
	NothingDue Status = iota + 1
	// Archived means at least one window was committed.
	Archived
	// Deferred means a detach did not get its lock in time, or was
	// refused because the partition holds values in a column this
	// process does not declare (a newer process of a rolling upgrade
	// declared it, and archives it); the cycle stopped there and a later
	// one tries again. Outcome.Waiting says which.
	Deferred
	// LeaseContended means another archiver holds the table's lease.
	LeaseContended
	// Quarantined means the cold schema cannot take the declared rows;
	// archival halts until an operator resolves the drift.
	Quarantined
	// Failed means the cycle ended with an error.
	Failed
)

// String returns the status in snake case, as outcomes are reported.
func (s Status) String() string {
	switch s {
	case NothingDue:
		return "nothing_due"
	case Archived:
		return "archived"
	case Deferred:
		return "deferred"
	case LeaseContended:
		return "lease_contended"
	case Quarantined:
		return "quarantined"
	case Failed:
		return "failed"
	}
	return "unknown"
}

// A Window is one archived range [From, To) of a table.
type Window struct {
	From, To time.Time
	Rows     int64 // readings committed
	// Recovered is true for a window whose partitions a previous cycle
	// detached and did not commit.
	Recovered bool
}

// An Outcome reports one cycle of one table.
type Outcome struct {
	Table     string
	Status    Status
	Windows   []Window    // committed this cycle, in order
	Watermark time.Time   // W after the cycle; zero if nothing was ever archived
	Dropped   []time.Time // starts of the partitions dropped this cycle
	// Reconciled are the starts of the partitions found attached below W
	// (a database restored from a backup older than their archival)
	// whose every row the cold tier holds: detached this cycle, dropped
	// after the reader grace.
	Reconciled []time.Time
	// Violations describes invariant violations found: attached partitions
	// below W holding rows the cold tier does not, and windows whose
	// committed rows did not match those read.
	Violations []string
	// Waiting says what a Deferred cycle waits for: a lock held by
	// another session, or a process that declares a column the window's
	// rows hold values in.
	Waiting string
	// RollupSnapshot is the snapshot of the daily rollup the cycle
	// committed, zero if none, with RollupRows rows; RollupErr says why
	// the rollup could not be caught up, which leaves it behind until a
	// later cycle (reads compute what it lacks from the readings).
	RollupSnapshot int64
	RollupRows     int64
	RollupErr      string
}

// Healthy reports whether the cycle needs no operator: it did not fail,
// the table is not quarantined, and no invariant is violated.
func (o *Outcome) Healthy() bool {
	return o.Status != Failed && o.Status != Quarantined && len(o.Violations) == 0
}

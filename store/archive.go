package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/meterstore/meterstore/internal/archive"
	"github.com/meterstore/meterstore/internal/metrics"
)

// ArchiveOutcome reports what one archival cycle did with a table. It is
// the archiver's outcome field for field, so that it converts without a
// copy of its parts.
type ArchiveOutcome struct {
	Table  string
	Status ArchiveStatus
	// Windows are the windows committed this cycle, in order: each
	// [From, To) with the Rows committed, Recovered when a previous cycle
	// had detached its partitions and not committed them.
	Windows   []archive.Window
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
	// RollupSnapshot is the snapshot of the table's daily rollup the
	// cycle committed, zero if none, with RollupRows rows; RollupErr says
	// why the rollup could not be caught up: it stays behind, which costs
	// reads of daily time, not answers, until a later cycle.
	RollupSnapshot int64
	RollupRows     int64
	RollupErr      string
}

// Healthy reports whether the cycle needs no operator: it neither failed
// nor was quarantined, and found no violation.
func (o *ArchiveOutcome) Healthy() bool { return (*archive.Outcome)(o).Healthy() }

// ArchiveStatus summarizes an ArchiveOutcome.
type ArchiveStatus = archive.Status

// The statuses of an archival cycle. Only ArchiveFailed and
// ArchiveQuarantined need an operator; ArchiveDeferred and
// ArchiveLeaseContended are benign no-ops.
const (
	ArchiveNothingDue     = archive.NothingDue
	ArchiveArchived       = archive.Archived
	ArchiveDeferred       = archive.Deferred
	ArchiveLeaseContended = archive.LeaseContended
	ArchiveQuarantined    = archive.Quarantined
	ArchiveFailed         = archive.Failed
)

// Archive runs one archival cycle of table name at now: it archives the
// windows due (a bounded number), drops detached partitions past their
// reader grace and checks that no attached partition lies below the
// watermark. LeaseContended and Deferred are outcomes, not errors. A now
// that cannot be the time (see CheckNow), or before the watermark, is
// refused with ErrNowOutOfRange.
func (s *Store) Archive(ctx context.Context, name string, now time.Time) (out ArchiveOutcome, err error) {
	defer func() {
		if out.Status == archive.Failed || out.Status == archive.Quarantined {
			s.metrics.ArchivalFailed(ctx, name, failureReason(out.Status, err))
		}
	}()
	t, err := s.table(name)
	if err != nil {
		return ArchiveOutcome{Table: name, Status: archive.Failed}, err
	}
	var q *QuarantineError
	if err := s.lift(ctx, t); errors.As(err, &q) {
		// The hot tier refuses the declaration's change of columns still.
		return ArchiveOutcome{Table: name, Status: archive.Quarantined}, err
	} else if err != nil {
		return ArchiveOutcome{Table: name, Status: archive.Failed}, err
	}
	_, ct, _, err := s.opened(ctx, name)
	if err != nil {
		return ArchiveOutcome{Table: name, Status: archive.Failed}, err
	}
	// The archiver refuses a now before the watermark itself, under the
	// lease; the wall clock is the store's to know.
	if err := s.CheckNow(now); err != nil {
		return ArchiveOutcome{Table: name, Status: archive.Failed}, err
	}
	start := time.Now()
	cycled, err := s.arch.Cycle(ctx, t.decl, ct, now)
	out = ArchiveOutcome(cycled)
	if !out.Watermark.IsZero() {
		s.router.Observe(name, out.Watermark)
	}
	var rows int64
	for _, w := range out.Windows {
		rows += w.Rows
	}
	s.metrics.PartitionsDropped(ctx, name, int64(len(out.Dropped)))
	switch out.Status {
	case archive.Archived:
		s.metrics.Archived(ctx, name, rows, time.Since(start))
	case archive.Deferred:
		s.metrics.Deferred(ctx, name)
	case archive.LeaseContended:
		s.metrics.LeaseContended(ctx, name)
	}
	return out, err
}

// failureReason classifies an archival cycle that ended with status, and
// err, as the reason attribute of meterstore.archival.failures does.
func failureReason(status ArchiveStatus, err error) string {
	var inv *InvariantError
	var se *Error
	switch {
	case status == archive.Quarantined:
		return metrics.FailureQuarantine
	case errors.As(err, &inv), errors.As(err, &se) && se.Kind == InvariantViolation:
		return metrics.FailureInvariant
	case errors.Is(err, ErrCommitConflict), errors.Is(err, ErrWatermarkBackwards):
		return metrics.FailureConflict
	case errors.Is(err, ErrColdUnreachable):
		return metrics.FailureColdUnreachable
	case IsRetryable(err):
		return metrics.FailureTransient
	}
	return metrics.FailureOther
}

// lift applies t's declaration in the hot tier again if the tier
// quarantined it, as an operator may have resolved the cause since: once it
// takes it, the table is opened anew on its declaration. It returns the
// quarantine that remains, if any. An archival tries it first, so a
// resolved quarantine lifts within a maintenance cycle, without a restart.
func (s *Store) lift(ctx context.Context, t *table) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.quarantine == nil {
		return nil
	}
	err := s.hot.Ensure(ctx, t.decl)
	var q *QuarantineError
	switch {
	case errors.As(err, &q):
		t.quarantine = err
		return err
	case err != nil:
		return fmt.Errorf("store: declare %s: %w", t.decl.Name, err)
	}
	s.log.Info("store: quarantine lifted: the table runs on its declaration", "table", t.decl.Name, "was", t.quarantine)
	t.quarantine, t.stored, t.cold, t.query = nil, nil, nil, nil
	return nil
}

package consensus

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalid marks a request that was refused before anything was sent:
	// an empty shard name, a negative bound, a limit <= 0, an overflowing
	// sequence number.
	ErrInvalid = errors.New("invalid argument")

	// ErrCutAboveHead marks a Truncate whose cut lies above the head; on a
	// shard without entries every cut but 0 is above the head.
	ErrCutAboveHead = errors.New("truncate cut above head")

	// ErrIndeterminate marks a failure after which the operation may or may
	// not have taken effect, such as a connection lost after the statement
	// was sent. A caller must re-read the log to learn the outcome; it is
	// retryable for callers whose operation is idempotent.
	ErrIndeterminate error = &retryable{"outcome unknown"}

	// ErrTransient marks a failure that certainly changed nothing and may be
	// retried as is: a serialization failure, a deadlock, a connection that
	// failed before the request was sent.
	ErrTransient error = &retryable{"transient failure, nothing written"}

	// ErrCorrupt marks an entry, or a backend's own record, that is there
	// and cannot be read as what it must be: bytes a writer of the log
	// cannot have written. Trying again reads the same bytes, so it is
	// not retryable; an operator must restore the entry.
	ErrCorrupt error = &permanent{"corrupt log entry"}
)

// permanent is an error after which trying again cannot succeed.
type permanent struct{ msg string }

func (e *permanent) Error() string { return e.msg }

// IsRetryable reports false: the same request meets the same failure.
func (e *permanent) IsRetryable() bool { return false }

// retryable is an error after which trying again may succeed.
type retryable struct{ msg string }

func (e *retryable) Error() string { return e.msg }

// IsRetryable reports true: the error passes if the operation, or for
// ErrIndeterminate an idempotent one, is tried again.
func (e *retryable) IsRetryable() bool { return true }

// IsRetryable reports whether err is a determinate failure that changed
// nothing and may be retried unchanged.
func IsRetryable(err error) bool { return errors.Is(err, ErrTransient) }

// IsIndeterminate reports whether the outcome of the failed operation is unknown.
func IsIndeterminate(err error) bool { return errors.Is(err, ErrIndeterminate) }

// ValidateShard checks a shard name.
func ValidateShard(shard string) error {
	if shard == "" {
		return fmt.Errorf("%w: empty shard name", ErrInvalid)
	}
	return nil
}

// ValidateScan checks the arguments of Scan.
func ValidateScan(shard string, from int64, limit int) error {
	if err := ValidateShard(shard); err != nil {
		return err
	}
	if from < 0 {
		return fmt.Errorf("%w: scan from %d is negative", ErrInvalid, from)
	}
	if limit <= 0 {
		return fmt.Errorf("%w: scan limit %d must be positive", ErrInvalid, limit)
	}
	return nil
}

// ValidateCompareAndSet checks the arguments of CompareAndSet.
func ValidateCompareAndSet(shard string, expected int64, data []byte) error {
	if err := ValidateShard(shard); err != nil {
		return err
	}
	if expected < Empty {
		return fmt.Errorf("%w: expected %d below Empty (-1)", ErrInvalid, expected)
	}
	if expected == MaxSeqNo {
		return fmt.Errorf("%w: expected %d: next sequence number overflows int64", ErrInvalid, expected)
	}
	return nil
}

// ValidateTruncate checks the arguments of Truncate.
func ValidateTruncate(shard string, cut int64) error {
	if err := ValidateShard(shard); err != nil {
		return err
	}
	if cut < 0 {
		return fmt.Errorf("%w: truncate cut %d is negative", ErrInvalid, cut)
	}
	return nil
}

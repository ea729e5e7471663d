package privacy

import (
	"errors"
	"fmt"

	"github.com/meterstore/meterstore/internal/pgerr"
	"github.com/meterstore/meterstore/series"
)

// The registry's errors are *series.Error values: use errors.As to read
// their Kind, and series.IsRetryable to decide whether to try again. Every
// operation of the package is safe to repeat, including one whose commit
// was lost with its connection.

// opName prefixes the registry's operations in errors, which read
// "privacy: sweep: unavailable: ...".
func opName(op string) string { return "privacy: " + op }

// invalid returns an InvalidInput error of op.
func invalid(op, format string, args ...any) error {
	return &series.Error{Kind: series.InvalidInput, Op: opName(op), Err: fmt.Errorf(format, args...)}
}

// classify wraps err in a *series.Error: ErrSuppressed as an
// IntegrityViolation, ErrNoSubjectKey and ErrSubjectKeyMismatch as
// InvalidConfig, and a failure of the server or the connection by its
// kind; a *series.Error passes through unchanged.
func classify(op string, err error) error {
	var se *series.Error
	switch {
	case err == nil, errors.As(err, &se):
		return err
	case errors.Is(err, ErrSuppressed):
		return &series.Error{Kind: series.IntegrityViolation, Op: opName(op), Err: err}
	case errors.Is(err, ErrNoSubjectKey), errors.Is(err, ErrSubjectKeyMismatch):
		return &series.Error{Kind: series.InvalidConfig, Op: opName(op), Err: err}
	}
	return pgerr.Classify(opName(op), "", err)
}

// ErrSuppressed is the cause of the IntegrityViolation Register returns for
// a subject that was erased and is on the suppression list: the registry
// issues it no reference, so a later delivery cannot link it again. Test
// for it with errors.Is; Unsuppress lifts it.
var ErrSuppressed = series.NewSentinel("subject erased and suppressed", false)

// ErrNoSubjectKey is the cause of the InvalidConfig error returned by
// Erase and Unsuppress without Options.SubjectKey, and by Register when it
// would issue a new reference while the suppression list, which it cannot
// read without the key, is not empty.
var ErrNoSubjectKey = series.NewSentinel("no subject key configured", false)

// ErrSubjectKeyMismatch is the cause of the InvalidConfig error returned
// when Options.SubjectKey is not the key the suppression list was written
// with: the list would not match a single subject under it.
var ErrSubjectKeyMismatch = series.NewSentinel("subject key differs from the one the suppression list was written with", false)

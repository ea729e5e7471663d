// Package apierror classifies the errors of a query once for every
// protocol meterstore serve speaks: what kind of failure it is, the code
// and message the client is told, and whether it is the client's doing.
// The HTTP API maps a Kind to a status, Flight SQL to a gRPC code.
package apierror

import (
	"context"
	"errors"

	"github.com/meterstore/meterstore/store"
)

// A Kind is what a failed query is, as its client is told.
type Kind int

// The kinds of failure. Every kind but Internal and Altered is the
// client's doing or a state worth retrying.
const (
	Internal     Kind = iota
	NotReadOnly       // not a single SELECT
	InvalidQuery      // DuckDB cannot parse, bind or evaluate the statement
	Forbidden         // the statement reads a table the caller may not read
	NotPermitted      // the statement reaches past what a query may read
	NotFound          // no such table
	Timeout           // past query.timeout
	MemoryLimit       // past query.memory_limit
	TooLarge          // a value or result past what a query may hand over
	Altered           // a cold file is not the one its commit recorded
	Unavailable       // worth retrying unchanged
	Canceled          // the client went away
)

// A Failure is a classified error: its kind, the code a client is told
// (such as "invalid_query") and the message.
type Failure struct {
	Kind    Kind
	Code    string
	Message string
}

// Client reports whether the failure is the client's doing, or a state it
// may retry: everything but Internal and Altered. Such failures are logged
// at INFO at most and without the error's text, which may quote the
// statement.
func (f Failure) Client() bool { return f.Kind != Internal && f.Kind != Altered }

// Query classifies the error of a query run under ctx. An internal error's
// message is "internal error": the error itself is logged, not answered.
func Query(ctx context.Context, err error) Failure {
	var fe *store.ForbiddenError
	switch {
	case ctx.Err() != nil:
		return Failure{Canceled, "canceled", "the request was canceled"}
	case errors.As(err, &fe):
		return Failure{Forbidden, "forbidden", err.Error()}
	case errors.Is(err, store.ErrNotReadOnly):
		return Failure{NotReadOnly, "not_read_only", err.Error() + " (queries are read-only)"}
	case errors.Is(err, store.ErrInvalidQuery):
		return Failure{InvalidQuery, "invalid_query", err.Error()}
	case errors.Is(err, store.ErrNotPermitted):
		return Failure{NotPermitted, "not_permitted", err.Error()}
	case errors.Is(err, store.ErrQueryTimeout):
		return Failure{Timeout, "timeout", err.Error()}
	case errors.Is(err, store.ErrMemoryLimit):
		return Failure{MemoryLimit, "memory_limit", err.Error()}
	case errors.Is(err, store.ErrResultTooLarge), errors.Is(err, store.ErrTooManyRows):
		return Failure{TooLarge, "too_large", err.Error()}
	case errors.Is(err, store.ErrMissingFile):
		return Failure{Altered, "missing_file", err.Error()}
	case errors.Is(err, store.ErrAlteredFile):
		// Before ErrColdUnreachable, which wraps it: the operator needs
		// the file's name, and the client to know it is no outage.
		return Failure{Altered, "altered_file", err.Error()}
	case errors.Is(err, store.ErrNoTable):
		return Failure{NotFound, "not_found", err.Error()}
	case store.IsRetryable(err):
		return Failure{Unavailable, "unavailable", err.Error()}
	}
	return Failure{Internal, "internal", "internal error"}
}

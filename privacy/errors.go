package privacy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/meterstore/meterstore/internal/pgerr"
)

// A Kind classifies an *Error by who is at fault and whether retrying helps.
type Kind uint8

// The kinds of error. Only Unavailable is worth retrying.
const (
	// InvalidInput means an argument was refused before anything was sent
	// to the server: an empty natural id, legal basis or actor, a zero or
	// out-of-range Retention, a zero instant. The caller is at fault.
	InvalidInput Kind = iota + 1
	// InvalidConfig means the options are wrong or the database does not
	// let the registry exist as declared: a bad schema name, a missing
	// privilege, a relation of the same name that is something else.
	InvalidConfig
	// Unavailable means the server could not be reached, a lock could not
	// be had, or the transaction lost a race (a deadlock or serialization
	// failure). Every operation of the package may be retried unchanged.
	Unavailable
	// Internal is any other failure of the server. Retrying repeats it.
	Internal
)

var kindNames = [...]string{
	InvalidInput:  "invalid input",
	InvalidConfig: "invalid configuration",
	Unavailable:   "unavailable",
	Internal:      "internal error",
}

// String returns the kind's name, such as "invalid input".
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// An Error is returned by every operation of the package. Use errors.As to
// inspect its Kind and IsRetryable to decide whether to try again.
type Error struct {
	Kind Kind
	Op   string // the operation: "open", "register", "erase", "sweep", ...
	Err  error  // the underlying cause
}

// Error formats the operation, the kind and the cause.
func (e *Error) Error() string {
	s := "privacy: " + e.Op + ": " + e.Kind.String()
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying cause, so errors.As finds a server error
// behind it.
func (e *Error) Unwrap() error { return e.Err }

// IsRetryable reports whether the operation may succeed if tried again
// unchanged. Every operation of the package is safe to repeat, including
// one whose commit was lost with its connection.
func (e *Error) IsRetryable() bool { return e.Kind == Unavailable }

// IsRetryable reports whether err is an *Error that may succeed if retried.
func IsRetryable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.IsRetryable()
}

// invalid returns an InvalidInput error of op.
func invalid(op, format string, args ...any) error {
	return &Error{Kind: InvalidInput, Op: op, Err: fmt.Errorf(format, args...)}
}

// classify wraps a failure of the server or the connection in an *Error.
// An *Error passes through unchanged.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Kind: kindOf(err), Op: op, Err: err}
}

// kindOf maps an error to its Kind, by the same rules as the hot tier:
// a transient failure is Unavailable, other server errors go by SQLSTATE.
func kindOf(err error) Kind {
	if pgerr.Transient(err) {
		return Unavailable
	}
	switch code := pgerr.Code(err); {
	case pgerr.Undefined(code),
		code == "42809": // wrong object type, such as a view named subjects
		return InvalidConfig
	case strings.HasPrefix(code, "22"): // data exception, such as text that is not UTF-8
		return InvalidInput
	}
	return Internal
}

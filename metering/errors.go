package metering

import (
	"errors"
	"fmt"
	"strconv"
)

// Reasons wrapped by a *ParseError, for use with errors.Is.
var (
	// ErrSyntax reports an input that does not have the required shape.
	ErrSyntax = errors.New("invalid syntax")
	// ErrRange reports a well-formed number outside its permitted range.
	ErrRange = errors.New("value out of range")
	// ErrCheckDigit reports an identifier whose check digit does not match
	// the digits before it: well-formed, but corrupted or invented.
	ErrCheckDigit = errors.New("check digit mismatch")
	// ErrUnknown reports text that is not one of the codes this package knows.
	ErrUnknown = errors.New("unknown code")
)

// A ParseError reports an input that could not be parsed. Err wraps one of
// ErrSyntax, ErrRange, ErrCheckDigit or ErrUnknown, so a caller can refuse a
// corrupted identifier differently from a malformed one.
type ParseError struct {
	Kind  string // what was being parsed, such as "MaLo" or "OBIS code"
	Input string // the rejected input
	Err   error  // the reason
}

// Error formats the kind, the quoted input and the reason.
func (e *ParseError) Error() string {
	in := e.Input
	// Inputs come from deliveries of unknown quality; keep log lines bounded.
	if len(in) > 48 {
		in = in[:48] + "..."
	}
	return "metering: invalid " + e.Kind + " " + strconv.Quote(in) + ": " + e.Err.Error()
}

// Unwrap returns the reason, so errors.Is sees the sentinel behind it.
func (e *ParseError) Unwrap() error { return e.Err }

// parseError builds a *ParseError whose reason adds detail to a sentinel.
func parseError(kind, input string, reason error, detail string) *ParseError {
	if detail != "" {
		reason = fmt.Errorf("%w: %s", reason, detail)
	}
	return &ParseError{Kind: kind, Input: input, Err: reason}
}

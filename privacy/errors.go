package privacy

import (
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

// classify wraps a failure of the server or the connection in a
// *series.Error; one passes through unchanged.
func classify(op string, err error) error { return pgerr.Classify(opName(op), "", err) }

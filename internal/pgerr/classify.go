package pgerr

import (
	"errors"
	"strings"

	"github.com/meterstore/meterstore/series"
)

// Kind maps a failure of a statement or its connection to the Kind of
// error callers decide on. A transient failure is Unavailable: a write that
// may have committed before its connection failed is safe to retry, since
// redelivering a row is a no-op. Other server errors go by SQLSTATE class.
func Kind(err error) series.Kind {
	if Transient(err) {
		return series.Unavailable
	}
	switch code := Code(err); {
	case code == "":
		return series.Internal
	case Undefined(code),
		code == "42809", // wrong object type, such as a view where a table belongs
		code == "58P01": // missing file, such as an extension's library
		return series.InvalidConfig
	case strings.HasPrefix(code, "22"), // data exception
		code == "23502", code == "23514": // not null, check: a malformed row
		return series.InvalidInput
	case strings.HasPrefix(code, "23"): // integrity constraint violation
		return series.IntegrityViolation
	}
	return series.Internal
}

// Classify wraps a failure of the server or the connection in a
// *series.Error of op on table (which may be empty). A *series.Error passes
// through unchanged, and nil stays nil.
func Classify(op, table string, err error) error {
	if err == nil {
		return nil
	}
	var se *series.Error
	if errors.As(err, &se) {
		return err
	}
	return &series.Error{Kind: Kind(err), Op: op, Table: table, Err: err}
}

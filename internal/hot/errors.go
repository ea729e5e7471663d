package hot

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/meterstore/meterstore/internal/pgerr"
)

// A Kind classifies an *Error by who is at fault and whether retrying helps.
type Kind uint8

// The kinds of error. Only Unavailable is worth retrying.
const (
	// IntegrityViolation means the store refused to let something become
	// true: an overlapping interval, a second network operator for a
	// reading, a value restated under an existing version. The producer is
	// at fault; nothing was written.
	IntegrityViolation Kind = iota + 1
	// InvariantViolation means something already is true that should not be,
	// such as a declared table whose relation is missing. An operator is
	// needed; no producer can cause it.
	InvariantViolation
	// InvalidInput means a row or argument is malformed: a failed check
	// digit, an unknown code, a reading with no partition to go to.
	InvalidInput
	// InvalidConfig means a table declaration or setting is wrong or
	// contradicts the one already stored.
	InvalidConfig
	// Unavailable means the server could not be reached, a lock could not be
	// had within the DDL lock timeout, or a transaction lost a race. Nothing
	// was changed; retrying may succeed.
	Unavailable
	// Internal is any other failure, such as a statement the server will not
	// plan. Retrying repeats it.
	Internal
)

var kindNames = [...]string{
	IntegrityViolation: "integrity violation",
	InvariantViolation: "invariant violation",
	InvalidInput:       "invalid input",
	InvalidConfig:      "invalid configuration",
	Unavailable:        "unavailable",
	Internal:           "internal error",
}

// String returns the kind's name, such as "integrity violation".
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// ErrDeferred is wrapped by the Unavailable error of a DDL statement that
// could not get its lock within the DDL lock timeout. The statement changed
// nothing; a later attempt may succeed. Callers that schedule DDL treat it as
// a benign no-op and report it as "deferred".
var ErrDeferred = errors.New("deferred: lock not available within the DDL lock timeout")

// A Problem names one offending row of a batch.
type Problem struct {
	Row    int    // index into the batch passed to Write
	Reason string // what is wrong with it
}

// maxProblems bounds the detail kept for a failed batch; Rows stays complete.
const maxProblems = 100

// An Error is returned by every operation of the package. Use errors.As to
// inspect it and IsRetryable to decide whether to try again.
type Error struct {
	Kind  Kind
	Op    string // the operation: "write", "ensure", "create partition", ...
	Table string // the table's name, if the operation concerns one
	// Rows lists the offending rows of a refused batch, ascending. A batch
	// is atomic, so every other row was refused with them.
	Rows []int
	// Problems describes the first offending rows, at most 100 of them.
	Problems []Problem
	Err      error // the underlying cause, if any
}

// IsRetryable reports whether the failed operation changed nothing and may
// succeed if tried again unchanged.
func (e *Error) IsRetryable() bool { return e.Kind == Unavailable }

// Unwrap returns the underlying cause, so errors.Is sees ErrDeferred or a
// server error behind it.
func (e *Error) Unwrap() error { return e.Err }

// Error formats the operation, the table, the kind, the first offending
// rows and the cause.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("hot: ")
	b.WriteString(e.Op)
	if e.Table != "" {
		b.WriteString(" ")
		b.WriteString(e.Table)
	}
	b.WriteString(": ")
	b.WriteString(e.Kind.String())
	if len(e.Rows) > 0 {
		fmt.Fprintf(&b, ": %d row(s)", len(e.Rows))
		for i, p := range e.Problems {
			if i == 5 {
				fmt.Fprintf(&b, "; and %d more", len(e.Rows)-i)
				break
			}
			fmt.Fprintf(&b, "; row %d: %s", p.Row, p.Reason)
		}
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// IsRetryable reports whether err is an *Error that may succeed if retried.
func IsRetryable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.IsRetryable()
}

// problems collects the offending rows of a batch.
type problems struct {
	rows map[int]bool
	list []Problem
}

func (p *problems) add(row int, format string, args ...any) {
	if p.rows == nil {
		p.rows = make(map[int]bool)
	}
	if p.rows[row] {
		return // the first reason found for a row is enough
	}
	p.rows[row] = true
	p.list = append(p.list, Problem{Row: row, Reason: fmt.Sprintf(format, args...)})
}

func (p *problems) empty() bool { return len(p.rows) == 0 }

// error returns the problems as an *Error of kind k, ordered by row.
func (p *problems) error(k Kind, op, table string) *Error {
	sort.Slice(p.list, func(i, j int) bool { return p.list[i].Row < p.list[j].Row })
	rows := make([]int, len(p.list))
	for i, q := range p.list {
		rows[i] = q.Row
	}
	list := p.list
	if len(list) > maxProblems {
		list = list[:maxProblems:maxProblems]
	}
	return &Error{Kind: k, Op: op, Table: table, Rows: rows, Problems: list}
}

// classify wraps a failure of the server or the connection in an *Error.
// An *Error passes through unchanged.
func classify(op, table string, err error) error {
	if err == nil {
		return nil
	}
	var he *Error
	if errors.As(err, &he) {
		return err
	}
	return &Error{Kind: kindOf(err), Op: op, Table: table, Err: err}
}

// kindOf maps an error to its Kind. A transient failure is Unavailable:
// a write that may have committed before its connection failed is safe to
// retry, since redelivering a row is a no-op. Other server errors go by
// SQLSTATE class.
func kindOf(err error) Kind {
	if pgerr.Transient(err) {
		return Unavailable
	}
	switch code := pgerr.Code(err); {
	case code == "":
		return Internal
	case pgerr.Undefined(code),
		code == "58P01": // missing file, such as an extension's library
		return InvalidConfig
	case strings.HasPrefix(code, "22"), // data exception
		code == "23502", code == "23514": // not null, check: a malformed row
		return InvalidInput
	case strings.HasPrefix(code, "23"): // integrity constraint violation
		return IntegrityViolation
	}
	return Internal
}

package series

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// A Kind classifies an *Error by who is at fault and whether retrying helps.
// The hot tier, the cold tier and the subject registry share it.
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
	// had in time, or a transaction lost a race. Nothing was changed;
	// retrying may succeed.
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

// A Problem names one offending row of a batch.
type Problem struct {
	Row    int    // index into the batch as given
	Reason string // what is wrong with it
}

// MaxProblems bounds the detail an *Error keeps for a refused batch; its
// Rows stay complete.
const MaxProblems = 100

// An Error is returned by the operations of the tiers and the subject
// registry. Use errors.As to inspect it and IsRetryable to decide whether to
// try again.
type Error struct {
	Kind  Kind
	Op    string // the operation: "write", "ensure", "append late", "sweep", ...
	Table string // the table's name, if the operation concerns one
	// Rows lists the offending rows of a refused batch, ascending. A batch
	// is atomic, so every other row was refused with them.
	Rows []int
	// Problems describes the first offending rows, at most MaxProblems.
	Problems []Problem
	Err      error // the underlying cause, if any
}

// IsRetryable reports whether the failed operation changed nothing and may
// succeed if tried again unchanged.
func (e *Error) IsRetryable() bool { return e.Kind == Unavailable }

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Error formats the operation, the table, the kind, the first offending
// rows and the cause.
func (e *Error) Error() string {
	var b strings.Builder
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

// IsKind reports whether err is an *Error of kind k.
func IsKind(err error, k Kind) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == k
}

// Problems collects the offending rows of a batch, the first reason for
// each. The zero value is empty and ready to use.
type Problems struct {
	seen map[int]bool
	list []Problem
}

// Add records a reason for row, unless the row has one already.
func (p *Problems) Add(row int, format string, args ...any) {
	if p.seen[row] {
		return // the first reason found for a row is enough
	}
	if p.seen == nil {
		p.seen = make(map[int]bool)
	}
	p.seen[row] = true
	p.list = append(p.list, Problem{Row: row, Reason: fmt.Sprintf(format, args...)})
}

// merge adds q's problems to p's, for rows p has none for.
func (p *Problems) merge(q *Problems) {
	for _, pr := range q.list {
		if p.seen[pr.Row] {
			continue
		}
		if p.seen == nil {
			p.seen = make(map[int]bool)
		}
		p.seen[pr.Row] = true
		p.list = append(p.list, pr)
	}
}

// Empty reports whether no row was added.
func (p *Problems) Empty() bool { return len(p.list) == 0 }

// Err returns the problems as an *Error of kind k, ordered by row, or nil
// when there are none.
func (p *Problems) Err(k Kind, op, table string) error {
	if p.Empty() {
		return nil
	}
	sort.Slice(p.list, func(i, j int) bool { return p.list[i].Row < p.list[j].Row })
	rows := make([]int, len(p.list))
	for i, q := range p.list {
		rows[i] = q.Row
	}
	list := p.list
	if len(list) > MaxProblems {
		list = list[:MaxProblems:MaxProblems]
	}
	return &Error{Kind: k, Op: op, Table: table, Rows: rows, Problems: list}
}

// rowRef is how a Problem's reason refers to another row of its batch,
// such as the one a row restates: "restates row 0 under version ...". The
// reference comes before the reason's first colon; what follows one may
// quote the rows' values, which are never rewritten.
var rowRef = regexp.MustCompile(`\brow (\d+)\b`)

// RenameRow returns the reason with its reference to another row of the
// batch, if any, renamed: "row N" becomes name(N), such as "row 7" of a
// larger batch or "line 12" of a file. A reason without one, or whose row
// name does not know, is returned unchanged.
func (p Problem) RenameRow(name func(row int) (string, bool)) string {
	head, _, _ := strings.Cut(p.Reason, ":")
	m := rowRef.FindStringSubmatchIndex(head)
	if m == nil {
		return p.Reason
	}
	i, err := strconv.Atoi(p.Reason[m[2]:m[3]])
	if err != nil {
		return p.Reason
	}
	s, ok := name(i)
	if !ok {
		return p.Reason
	}
	return p.Reason[:m[0]] + s + p.Reason[m[1]:]
}

// NewSentinel returns an error value for callers to compare with
// errors.Is, whose IsRetryable method says whether the operation it ends
// may succeed if tried again unchanged.
func NewSentinel(msg string, retryable bool) error { return &sentinel{msg, retryable} }

type sentinel struct {
	msg       string
	retryable bool
}

func (e *sentinel) Error() string     { return e.msg }
func (e *sentinel) IsRetryable() bool { return e.retryable }

// ErrNotConfirmed is returned by a purge whose confirmation does not
// repeat the table's name.
var ErrNotConfirmed = NewSentinel("purge not confirmed: repeat the table's name", false)

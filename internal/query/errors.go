package query

import (
	"errors"
	"fmt"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/series"
)

// ErrNotReadOnly is wrapped by the refusal of a statement that is not a
// single SELECT: DDL, DML, COPY, ATTACH, INSTALL, LOAD, PRAGMA, SET, CALL,
// EXPORT, EXPLAIN, or several statements at once.
var ErrNotReadOnly = errors.New("query: only a single SELECT statement may run")

// ErrManyStatements is wrapped by the refusal of a text of several
// statements, which a protocol may answer otherwise than a write; it wraps
// ErrNotReadOnly.
var ErrManyStatements = fmt.Errorf("%w: send one statement at a time", ErrNotReadOnly)

// ErrColdUnreachable is wrapped by the error of a query that needs the cold
// tier when its watermark or its files cannot be read. It is
// cold.ErrUnreachable, the one sentinel of every tier.
var ErrColdUnreachable = cold.ErrUnreachable

// ErrInFlight is wrapped by the error of a query whose range holds rows an
// archival has detached from the hot tier and not yet committed to the cold
// one, so that neither tier can show them. It is worth retrying.
var ErrInFlight = series.NewSentinel("query: rows of the range are in flight between the tiers", true)

// ErrTooManyRows is wrapped by the error of a query whose result would have
// more rows than Settings.MaxRows: a result is held in memory.
var ErrTooManyRows = errors.New("query: too many rows in the result")

// ErrResultTooLarge is wrapped by the error of a query whose result would
// hold more bytes in memory than Settings.MaxResultBytes.
var ErrResultTooLarge = errors.New("query: the result is too large to hold in memory")

// ErrTimeout is wrapped, together with context.DeadlineExceeded, by the
// error of a query that ran longer than Settings.Timeout. Running it again
// unchanged would most likely time out again: it is not retryable.
var ErrTimeout = series.NewSentinel("query: the query timed out", false)

// ErrInvalidQuery is wrapped by the error of a statement DuckDB cannot
// parse or bind: a syntax error, an unknown table, column or function,
// arguments of the wrong types. The statement is to blame; running it
// again unchanged fails again.
var ErrInvalidQuery = series.NewSentinel("query: invalid statement", false)

// ErrNotPermitted is wrapped by the error of a statement that reaches past
// what a query may touch: a file other than the planned ones, the network,
// an extension, a secret, a setting. The statement is to blame, not the
// engine; running it again unchanged fails again.
var ErrNotPermitted = series.NewSentinel("query: the statement reaches past what a query may read", false)

// ErrMemoryLimit is wrapped by the error of a statement that needs more
// memory than Settings.MemoryLimit allows.
var ErrMemoryLimit = series.NewSentinel("query: the statement needs more memory than the query memory limit", false)

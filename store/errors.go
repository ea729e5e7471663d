package store

import (
	"context"
	"errors"

	icetable "github.com/apache/iceberg-go/table"

	"github.com/meterstore/meterstore/internal/archive"
	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/pgerr"
	"github.com/meterstore/meterstore/internal/query"
	"github.com/meterstore/meterstore/series"
)

// The errors a caller decides on. A refused write or failed tier operation
// is an *Error whose Kind says who is at fault; the rest are sentinels to
// compare with errors.Is and types to read with errors.As.
type (
	// Error is the error of the tiers and the subject registry; see
	// series.Error.
	Error = series.Error
	// Kind classifies an *Error.
	Kind = series.Kind
	// QuarantineError reports a table whose cold schema cannot take its
	// rows; it archives nothing until an operator resolves the drift.
	QuarantineError = cold.QuarantineError
	// InvariantError reports that something already is true that must not
	// be, such as rows below the watermark in PostgreSQL.
	InvariantError = archive.InvariantError
	// AlteredFileError reports a cold data file that is not the file its
	// commit recorded; it wraps ErrAlteredFile.
	AlteredFileError = cold.AlteredFileError
	// WatermarkRegression is the violation an *InvariantError carries
	// when a catalog shows a lower watermark than the archival ledger
	// recorded as committed: its log lost its newest entries.
	WatermarkRegression = archive.WatermarkRegression
)

// The kinds of *Error.
const (
	IntegrityViolation = series.IntegrityViolation
	InvariantViolation = series.InvariantViolation
	InvalidInput       = series.InvalidInput
	InvalidConfig      = series.InvalidConfig
	Unavailable        = series.Unavailable
	Internal           = series.Internal
)

var (
	// ErrNoTable is returned for a table name the Store does not declare.
	ErrNoTable = errors.New("store: no such table")
	// ErrNotReadOnly refuses a query that is not a single SELECT.
	ErrNotReadOnly = query.ErrNotReadOnly
	// ErrManyStatements refuses a text of several statements; it wraps
	// ErrNotReadOnly.
	ErrManyStatements = query.ErrManyStatements
	// ErrTooManyRows refuses a result larger than QueryOptions.MaxRows.
	ErrTooManyRows = query.ErrTooManyRows
	// ErrResultTooLarge refuses a result that would hold more bytes in
	// memory than QueryOptions.MaxResultBytes.
	ErrResultTooLarge = query.ErrResultTooLarge
	// ErrQueryTimeout fails a query that ran longer than
	// QueryOptions.Timeout; its error wraps context.DeadlineExceeded too,
	// but it is not retryable: run unchanged, it would time out again.
	ErrQueryTimeout = query.ErrTimeout
	// ErrForbidden is wrapped by a *ForbiddenError: the refusal, before
	// anything is read, of a statement that reads a table its caller may
	// not read (Prepare).
	ErrForbidden = query.ErrForbidden
	// ErrNotPermitted fails a statement that reaches past what a query may
	// read: another file, the network, an extension, a secret, a setting.
	ErrNotPermitted = query.ErrNotPermitted
	// ErrMemoryLimit fails a statement that needs more memory than
	// QueryOptions.MemoryLimit allows.
	ErrMemoryLimit = query.ErrMemoryLimit
	// ErrColdUnreachable is wrapped by the error of every operation that
	// needs the cold tier while its warehouse, catalog or files cannot be
	// read: a query, a write with late corrections, an archival. A write's
	// and an archival's are retryable; a query's as its cause says.
	ErrColdUnreachable = cold.ErrUnreachable
	// ErrInFlight fails a query whose rows an archival is moving between
	// the tiers; it is retryable.
	ErrInFlight = query.ErrInFlight
	// ErrCommitConflict is wrapped by a cold commit that lost to another
	// or that the watermark check refused; nothing was committed.
	ErrCommitConflict = icetable.ErrCommitFailed
	// ErrWatermarkBackwards is wrapped by the refusal of a commit that
	// would move a table's watermark back.
	ErrWatermarkBackwards = cold.ErrWatermarkBackwards
	// ErrNotConfirmed refuses a purge whose confirmation does not repeat
	// the table's name.
	ErrNotConfirmed = series.ErrNotConfirmed
	// ErrAlteredFile is wrapped by the refusal to read a cold data file
	// that is not the file its commit recorded (another size, or found so
	// by Verify), and by the status of its table.
	ErrAlteredFile = cold.ErrAltered
	// ErrMissingFile is wrapped, beside ErrAlteredFile, by the refusal to
	// read a table whose snapshot references a cold data file that is
	// gone, and by the status of its table.
	ErrMissingFile = cold.ErrMissingFile
	// ErrLeaseHeld is wrapped by the refusal of snapshot expiry or a
	// watermark re-stamp while another session holds the table's archive
	// lease; it is retryable.
	ErrLeaseHeld = archive.ErrLeaseHeld
)

// IsRetryable reports whether err may go away when the operation is tried
// again unchanged: a lock not had in time, a lost connection, a log write
// whose outcome is unknown, rows in flight between the tiers, a busy
// private server, a timeout. Writes are idempotent, so retrying one after
// such an error is safe. A refused delivery, an invalid configuration and
// an invariant violation are not retryable.
//
// The error that decides is the outermost in err's chain with an
// IsRetryable method; a deadline, a network failure (a connection, a name
// lookup, a timeout) or a PostgreSQL error whose SQLSTATE is transient
// (the server shutting down, a connection exception, a serialization
// failure) that no tier classified is retryable too; a file that is
// missing or a directory is not.
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	var r interface{ IsRetryable() bool }
	if errors.As(err, &r) {
		return r.IsRetryable()
	}
	// Not any net.Error: a syscall.Errno such as ENOENT is one too. Not
	// pgerr.Transient as a whole either: it takes any io.EOF for a lost
	// connection, and a truncated delivery is not worth retrying.
	return errors.Is(err, context.DeadlineExceeded) || pgerr.Network(err) ||
		pgerr.Code(err) != "" && pgerr.Transient(err)
}

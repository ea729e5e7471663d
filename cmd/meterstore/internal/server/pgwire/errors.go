package pgwire

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/apierror"
	"github.com/meterstore/meterstore/store"
)

// SQLSTATEs the server answers with, as PostgreSQL names them.
const (
	codeProtocolViolation    = "08P01"
	codeInvalidPassword      = "28P01"
	codeInvalidAuthorization = "28000"
	codeSyntaxError          = "42601"
	codeUndefinedTable       = "42P01"
	codeUndefinedColumn      = "42703"
	codeUndefinedFunction    = "42883"
	codeUndefinedObject      = "42704"
	codeInsufficientPriv     = "42501"
	codeReadOnly             = "25006"
	codeInFailedTransaction  = "25P02"
	codeActiveTransaction    = "25001"
	codeNoActiveTransaction  = "25P01"
	codeQueryCanceled        = "57014"
	codeFeatureNotSupported  = "0A000"
	codeInvalidParamValue    = "22023"
	codeCantChangeParam      = "55P02"
	codeDataException        = "22000"
	codeTooManyConnections   = "53300"
	codeInsufficientRes      = "53000"
	codeOutOfMemory          = "53200"
	codeProgramLimit         = "54000"
	codeNotInPrerequisite    = "55000"
	codeDataCorrupted        = "XX001"
	codeInternal             = "XX000"
	codeUndefinedPStatement  = "26000"
	codeUndefinedCursor      = "34000"
	codeAdminShutdown        = "57P01"
	codeSyntaxOrAccess       = "42000"
)

// A wireError is an error answered to the client as an ErrorResponse.
type wireError struct {
	code, msg, detail, hint string
	fatal                   bool // the connection ends after it
}

func (e *wireError) Error() string { return e.code + ": " + e.msg }

// errorf returns the wireError of code and a formatted message.
func errorf(code, format string, args ...any) *wireError {
	return &wireError{code: code, msg: fmt.Sprintf(format, args...)}
}

// protocolError is a message the protocol does not allow.
func protocolError(format string, args ...any) *wireError {
	return errorf(codeProtocolViolation, format, args...)
}

// response returns the ErrorResponse of e.
func (e *wireError) response() *pgproto3.ErrorResponse {
	sev := "ERROR"
	if e.fatal {
		sev = "FATAL"
	}
	return &pgproto3.ErrorResponse{Severity: sev, SeverityUnlocalized: sev, Code: e.code,
		Message: e.msg, Detail: e.detail, Hint: e.hint}
}

// errCanceled is the error of a statement a CancelRequest ended.
var errCanceled = errors.New("pgwire: canceled")

// errStatementTimeout is the error of a statement past the session's
// statement_timeout.
var errStatementTimeout = errors.New("pgwire: statement_timeout")

// classify returns the wireError of err, an error of a statement run
// under ctx: the store's refusals as the HTTP API classifies them
// (apierror), each under the SQLSTATE drivers know it by, an error the
// catalog returned as it is, and a cancel as PostgreSQL words it.
func classify(ctx context.Context, err error) *wireError {
	var we *wireError
	if errors.As(err, &we) {
		return we
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return &wireError{code: pe.Code, msg: pe.Message, detail: pe.Detail, hint: pe.Hint}
	}
	switch {
	case errors.Is(err, errCanceled):
		return errorf(codeQueryCanceled, "canceling statement due to user request")
	case errors.Is(err, errStatementTimeout):
		return errorf(codeQueryCanceled, "canceling statement due to statement timeout")
	}
	f := apierror.Query(ctx, err)
	if errors.Is(err, store.ErrManyStatements) {
		return errorf(codeSyntaxError, "%s", f.Message)
	}
	switch f.Kind {
	case apierror.NotReadOnly:
		return errorf(codeReadOnly, "%s", f.Message)
	case apierror.InvalidQuery:
		return errorf(invalidQueryCode(f.Message), "%s", f.Message)
	case apierror.Forbidden, apierror.NotPermitted:
		return errorf(codeInsufficientPriv, "%s", f.Message)
	case apierror.NotFound:
		return errorf(codeUndefinedTable, "%s", f.Message)
	case apierror.Timeout:
		return errorf(codeQueryCanceled, "canceling statement due to statement timeout: %s", f.Message)
	case apierror.Canceled:
		return errorf(codeQueryCanceled, "canceling statement: %s", f.Message)
	case apierror.MemoryLimit:
		return errorf(codeOutOfMemory, "%s", f.Message)
	case apierror.TooLarge:
		return errorf(codeProgramLimit, "%s", f.Message)
	case apierror.Altered:
		return errorf(codeDataCorrupted, "%s", f.Message)
	case apierror.Unavailable:
		e := errorf(codeNotInPrerequisite, "%s", f.Message)
		e.hint = "the statement may succeed if run again"
		return e
	}
	return errorf(codeInternal, "%s", f.Message)
}

// invalidQueryCode returns the SQLSTATE of DuckDB's refusal msg: an
// unknown relation, column or function, a syntax error, a value that does
// not convert; else 42000.
func invalidQueryCode(msg string) string {
	switch {
	case strings.Contains(msg, "Parser Error"):
		return codeSyntaxError
	case strings.Contains(msg, "Table with name") || strings.Contains(msg, "Table Function with name"):
		return codeUndefinedTable
	case strings.Contains(msg, "Referenced column") || strings.Contains(msg, "column") && strings.Contains(msg, "not found"):
		return codeUndefinedColumn
	case strings.Contains(msg, "Scalar Function with name") || strings.Contains(msg, "No function matches"):
		return codeUndefinedFunction
	case strings.Contains(msg, "Conversion Error") || strings.Contains(msg, "Invalid Input Error") || strings.Contains(msg, "Out of Range Error"):
		return codeDataException
	}
	return codeSyntaxOrAccess
}

// Package pgerr classifies failures of PostgreSQL statements and of the
// connections they travel on.
package pgerr

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Code returns the SQLSTATE of the server error in err's chain, or "" if
// the failure did not come from the server.
func Code(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// Transient reports whether err is a failure that may pass if the
// statement is tried again: a lock not had in time, a serialization
// failure or deadlock, a server shutting down or not yet accepting
// connections, a cancelled statement, a connection lost or never made,
// insufficient resources, or a context that ended. A write that may have
// committed before its connection failed is reported too; callers whose
// writes are idempotent may retry it.
func Transient(err error) bool {
	if code := Code(err); code != "" {
		switch {
		case code == "55P03", // lock_not_available
			code == "40001", code == "40P01", // serialization_failure, deadlock_detected
			code == "57P01", code == "57P02", code == "57P03", // shutdown, crash, cannot connect now
			code == "57014",               // query_canceled, such as a statement timeout
			strings.HasPrefix(code, "08"), // connection exception
			strings.HasPrefix(code, "53"): // insufficient resources
			return true
		}
		return false
	}
	var connectErr *pgconn.ConnectError
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		Network(err) || errors.As(err, &connectErr) ||
		pgconn.SafeToRetry(err) || pgconn.Timeout(err) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// Network reports whether err is a failure of the network: a dial, read or
// write on a connection (*net.OpError), a name lookup, or a timeout. It
// does not take every net.Error for one: syscall.Errno has the Timeout and
// Temporary methods too, so a missing file (ENOENT) or a directory read as
// a file (EISDIR) would pass for a network failure, and be retried forever.
// A connection closed while it was being made is one too: a
// *pgconn.ConnectError whose cause is the end of the stream (io.EOF,
// io.ErrUnexpectedEOF), as when a proxy or load balancer in front of the
// server accepts the connection and loses its upstream, rather than a
// refusal with a code (a password, a database that does not exist).
func Network(err error) bool {
	var (
		op  *net.OpError
		dns *net.DNSError
		ne  net.Error
		ce  *pgconn.ConnectError
	)
	return errors.As(err, &op) || errors.As(err, &dns) || errors.As(err, &ne) && ne.Timeout() ||
		errors.As(err, &ce) && Code(err) == "" && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF))
}

// Undefined reports whether code says a configured object is missing or
// not allowed: a table, column, schema or other object that does not
// exist, or a privilege the role lacks.
func Undefined(code string) bool {
	switch code {
	case "42501", // insufficient_privilege
		"42P01", "42703", "3F000", // undefined table, column, schema
		"42704": // undefined object
		return true
	}
	return false
}

// NoTable reports whether err is PostgreSQL's undefined_table (42P01):
// the statement names a table that does not exist. The tables a component
// creates on first use (the archival ledger, the record of altered files,
// the server's access tokens and idempotency records) read its absence
// as holding nothing.
func NoTable(err error) bool { return Code(err) == "42P01" }

// NoColumn reports whether err is PostgreSQL's undefined_column (42703):
// a table created by an earlier release, before the column was added.
func NoColumn(err error) bool { return Code(err) == "42703" }

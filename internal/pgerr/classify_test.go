package pgerr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/meterstore/meterstore/series"
)

// TestKind maps failures of statements and connections to the Kind callers
// decide on, for the hot tier and the subject registry alike.
func TestKind(t *testing.T) {
	for _, c := range []struct {
		err  error
		kind series.Kind
	}{
		{&pgconn.PgError{Code: "55P03"}, series.Unavailable}, // lock_not_available
		{&pgconn.PgError{Code: "40001"}, series.Unavailable}, // serialization_failure
		{&pgconn.PgError{Code: "57P01"}, series.Unavailable}, // admin_shutdown
		{&pgconn.PgError{Code: "08006"}, series.Unavailable}, // connection_failure
		{&pgconn.PgError{Code: "53100"}, series.Unavailable}, // disk_full
		{&pgconn.PgError{Code: "23505"}, series.IntegrityViolation},
		{&pgconn.PgError{Code: "23P01"}, series.IntegrityViolation},
		{&pgconn.PgError{Code: "22003"}, series.InvalidInput},
		{&pgconn.PgError{Code: "42P01"}, series.InvalidConfig},
		{&pgconn.PgError{Code: "42501"}, series.InvalidConfig},
		{&pgconn.PgError{Code: "42601"}, series.Internal}, // syntax_error: retrying repeats it
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), series.Unavailable},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, series.Unavailable},
		{context.DeadlineExceeded, series.Unavailable},
		{&pgconn.PgError{Code: "40P01"}, series.Unavailable}, // deadlock_detected
		{&pgconn.PgError{Code: "53300"}, series.Unavailable}, // too_many_connections
		{&pgconn.PgError{Code: "22021"}, series.InvalidInput},
		{&pgconn.PgError{Code: "23514"}, series.InvalidInput}, // check_violation: a malformed row
		{&pgconn.PgError{Code: "3F000"}, series.InvalidConfig},
		{&pgconn.PgError{Code: "42809"}, series.InvalidConfig}, // wrong_object_type
		{errors.New("something else"), series.Internal},
	} {
		err := Classify("write", "t", fmt.Errorf("insert: %w", c.err))
		var e *series.Error
		if !errors.As(err, &e) || e.Kind != c.kind || !errors.Is(err, c.err) {
			t.Errorf("classify(%v) = %v, want kind %v", c.err, err, c.kind)
			continue
		}
		if e.IsRetryable() != (c.kind == series.Unavailable) || series.IsRetryable(err) != e.IsRetryable() {
			t.Errorf("%v: IsRetryable %v", c.err, e.IsRetryable())
		}
	}
	if series.IsRetryable(errors.New("plain")) || series.IsRetryable(nil) {
		t.Error("a plain error is retryable")
	}
	inner := &series.Error{Kind: series.IntegrityViolation, Op: "write"}
	if got := Classify("x", "y", inner); got != error(inner) {
		t.Errorf("an *Error is not passed through: %v", got)
	}
	for k := series.IntegrityViolation; k <= series.Internal; k++ {
		if strings.HasPrefix(k.String(), "Kind(") {
			t.Errorf("kind %d has no name", k)
		}
	}
}

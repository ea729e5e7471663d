package pgerr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestTransient(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "55P03"}, true},
		{fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: "40001"}), true},
		{&pgconn.PgError{Code: "08006"}, true},
		{&pgconn.PgError{Code: "53100"}, true},
		{&pgconn.PgError{Code: "57014"}, true},
		{&pgconn.PgError{Code: "23505"}, false},
		{&pgconn.PgError{Code: "42P01"}, false},
		{&pgconn.PgError{Code: "22P02"}, false},
		{context.DeadlineExceeded, true},
		{io.ErrUnexpectedEOF, true},
		{pgconn.ErrConnClosed, true},
		{errors.New("something else"), false},
	} {
		if got := Transient(c.err); got != c.want {
			t.Errorf("Transient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	if Code(errors.New("x")) != "" || Code(&pgconn.PgError{Code: "23505"}) != "23505" {
		t.Error("Code")
	}
	if !Undefined("42P01") || Undefined("23505") {
		t.Error("Undefined")
	}
}

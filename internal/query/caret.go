package query

import (
	"strconv"
	"strings"
)

// DuckDB ends the message of an error it can place in a statement with the
// statement's line and a caret under the place:
//
//	Conversion Error: Could not convert string 'abc' to INT32
//
//	LINE 1: SELECT $1::INT AS x
//	               ^
//
// The statement DuckDB runs is not always the caller's: the result table is
// created by a statement of ours with the caller's on the lines after our
// own, and a statement naming a system relation runs as DuckDB's rendering
// of it (see analysis.render). An error must quote what the caller wrote,
// never our text around it.

// contextMark starts the line DuckDB quotes.
const contextMark = "\n\nLINE "

// A callerError is a DuckDB error whose message quotes the caller's
// statement: the line and caret moved to the caller's lines, or left out.
// It unwraps to the original error, whose kind classify reads.
type callerError struct {
	msg string
	err error
}

func (e *callerError) Error() string { return e.msg }

func (e *callerError) Unwrap() error { return e.err }

// quoteCaller returns err with the line DuckDB quotes relative to the
// caller's statement, which began after our first lines lines of the
// statement DuckDB ran. The quote is left out, caret and all, where it is
// not the caller's text: a line of ours, or any line of a statement that
// rendered is true of (a rewrite of the caller's, with other lines and
// columns).
func quoteCaller(err error, lines int, rendered bool) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	at := strings.LastIndex(msg, contextMark)
	if at < 0 {
		return err
	}
	rest := msg[at+len(contextMark):]
	num, quote, ok := strings.Cut(rest, ": ")
	n, nerr := strconv.Atoi(num)
	if !ok || nerr != nil || n < 1 {
		return err
	}
	if rendered || n <= lines {
		return &callerError{msg: msg[:at], err: err}
	}
	if lines == 0 {
		return err
	}
	text, caret, ok := strings.Cut(quote, "\n")
	if !ok {
		return &callerError{msg: msg[:at], err: err}
	}
	// The caret sits under the quoted line, after "LINE n: ": as many
	// spaces fewer as the number is shorter.
	fewer := len(num) - len(strconv.Itoa(n-lines))
	caret = caret[min(fewer, len(caret)-len(strings.TrimLeft(caret, " "))):]
	return &callerError{
		msg: msg[:at] + contextMark + strconv.Itoa(n-lines) + ": " + text + "\n" + caret,
		err: err,
	}
}

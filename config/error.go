package config

import (
	"strconv"

	"github.com/BurntSushi/toml"
)

// An Error is a problem with one key of a configuration file. Load and
// Parse return every problem they find, joined with errors.Join, so a file
// is fixed in one pass rather than one error at a time.
type Error struct {
	File string // the file's path; empty for Parse
	Line int    // the key's line, from 1; zero if unknown
	// Key is the key's path, such as "archive.settlement_lag" or
	// "table[1].column[0].name" (array elements counted from 0); empty for
	// the file as a whole.
	Key string
	Err error
}

// Error formats the position, the key and the problem, as in
// "meterstore.toml:12: archive.settlement_lag: duration 45 has no unit;
// write 45d".
func (e *Error) Error() string {
	var s string
	switch {
	case e.File != "" && e.Line > 0:
		s = e.File + ":" + strconv.Itoa(e.Line) + ": "
	case e.File != "":
		s = e.File + ": "
	case e.Line > 0:
		s = "config: line " + strconv.Itoa(e.Line) + ": "
	default:
		s = "config: "
	}
	if e.Key != "" {
		s += e.Key + ": "
	}
	return s + e.Err.Error()
}

// Unwrap returns the problem.
func (e *Error) Unwrap() error { return e.Err }

// syntaxError is a toml.ParseError reduced to its message, for an Error
// that carries the position itself.
type syntaxError struct{ pe toml.ParseError }

func (e syntaxError) Error() string { return e.pe.Message }

// Unwrap returns the toml.ParseError, whose ErrorWithPosition shows the
// offending line.
func (e syntaxError) Unwrap() error { return e.pe }

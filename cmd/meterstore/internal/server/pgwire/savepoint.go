package pgwire

import (
	"maps"
	"strings"
)

// Savepoints: drivers open one around statements they may retry (psycopg
// 3 in SQLAlchemy's connect, for one), and roll back to it after an
// error. Statements write nothing, so a savepoint keeps only what SET
// LOCAL had set when it was made, and rolling back to one ends a failed
// state as PostgreSQL does.

// codeInvalidSavepoint is invalid_savepoint_specification.
const codeInvalidSavepoint = "3B001"

// A savepoint is a SAVEPOINT of the transaction block.
type savepoint struct {
	name  string
	local map[string]string // the block's SET LOCAL settings when it was made
}

// savepointName returns the name a SAVEPOINT, RELEASE or ROLLBACK TO
// gives, folded as PostgreSQL folds an unquoted identifier.
func savepointName(toks []token) (string, bool) {
	if len(toks) > 0 && toks[0].is("savepoint") {
		toks = toks[1:]
	}
	if len(toks) != 1 {
		return "", false
	}
	if toks[0].quoted {
		return toks[0].text, true
	}
	return strings.ToLower(toks[0].text), true
}

// savepointAt returns the index of the latest savepoint of name, or -1.
func (s *session) savepointAt(name string) int {
	for i := len(s.savepoints) - 1; i >= 0; i-- {
		if s.savepoints[i].name == name {
			return i
		}
	}
	return -1
}

// savepoint answers SAVEPOINT name.
func (s *session) savepoint(toks []token) *cursor {
	name, ok := savepointName(append([]token{{text: "savepoint"}}, toks...))
	if !ok {
		return failed(errorf(codeSyntaxError, "syntax error: SAVEPOINT name"))
	}
	if s.tx == txIdle {
		return failed(errorf(codeNoActiveTransaction, "SAVEPOINT can only be used in transaction blocks"))
	}
	s.savepoints = append(s.savepoints, savepoint{name: name, local: maps.Clone(s.settings.local)})
	return static(nil, nil, "SAVEPOINT")
}

// release answers RELEASE [SAVEPOINT] name: it and the savepoints made
// after it are forgotten.
func (s *session) release(toks []token) *cursor {
	name, ok := savepointName(toks)
	if !ok {
		return failed(errorf(codeSyntaxError, "syntax error: RELEASE [SAVEPOINT] name"))
	}
	if s.tx == txIdle {
		return failed(errorf(codeNoActiveTransaction, "RELEASE SAVEPOINT can only be used in transaction blocks"))
	}
	i := s.savepointAt(name)
	if i < 0 {
		return failed(errorf(codeInvalidSavepoint, "savepoint %q does not exist", name))
	}
	s.savepoints = s.savepoints[:i]
	return static(nil, nil, "RELEASE")
}

// rollbackTo answers ROLLBACK [WORK | TRANSACTION] TO [SAVEPOINT] name,
// toks after TO: the block is as it was when the savepoint was made, which
// stays, and no longer failed.
func (s *session) rollbackTo(toks []token) *cursor {
	name, ok := savepointName(toks)
	if !ok {
		return failed(errorf(codeSyntaxError, "syntax error: ROLLBACK TO [SAVEPOINT] name"))
	}
	if s.tx == txIdle {
		return failed(errorf(codeNoActiveTransaction, "ROLLBACK TO SAVEPOINT can only be used in transaction blocks"))
	}
	i := s.savepointAt(name)
	if i < 0 {
		return failed(errorf(codeInvalidSavepoint, "savepoint %q does not exist", name))
	}
	s.savepoints = s.savepoints[:i+1]
	before := s.settings.reported()
	s.settings.local = maps.Clone(s.savepoints[i].local)
	s.reportChanges(before)
	s.tx = txBlock
	return static(nil, nil, "ROLLBACK")
}

package pgwire

import (
	"regexp"
	"strings"
)

// A kind is who answers a statement.
type kind int

const (
	kindStore   kind = iota // store.Prepare: a query
	kindEmpty               // nothing but blanks and comments
	kindLocal               // a session statement (local.go)
	kindCopy                // COPY (copy.go)
	kindCatalog             // Options.Catalog
)

// localWords start the statements the session answers itself.
var localWords = map[string]bool{
	"set": true, "reset": true, "show": true, "begin": true, "start": true, "commit": true, "end": true,
	"rollback": true, "abort": true, "discard": true, "deallocate": true, "savepoint": true, "release": true,
}

// firstWord matches the first word of a statement after blanks and
// comments.
var firstWord = regexp.MustCompile(`^(?:\s|--[^\n]*\n?|/\*(?s:.*?)\*/)*([A-Za-z]+)`)

// kindOf returns who answers sql.
func (s *session) kindOf(sql string) kind {
	m := firstWord.FindStringSubmatch(sql)
	if m == nil {
		if toks, ok := lex(sql); ok && len(toks) == 0 || ok && onlySemicolons(toks) {
			return kindEmpty
		}
	} else {
		switch w := strings.ToLower(m[1]); {
		case localWords[w]:
			return kindLocal
		case w == "copy":
			return kindCopy
		}
	}
	if c := s.srv.o.Catalog; c != nil && c.Handles(sql) {
		return kindCatalog
	}
	return kindStore
}

// onlySemicolons reports whether toks are all semicolons.
func onlySemicolons(toks []token) bool {
	for _, t := range toks {
		if t.text != ";" || t.quoted {
			return false
		}
	}
	return true
}

// endsBlock reports whether sql is COMMIT, END, ROLLBACK or ABORT: the
// statements a failed transaction block takes.
func endsBlock(sql string) bool {
	m := firstWord.FindStringSubmatch(sql)
	if m == nil {
		return false
	}
	switch strings.ToLower(m[1]) {
	case "commit", "end", "rollback", "abort":
		return true
	}
	return false
}

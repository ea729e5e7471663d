package pgcatalog

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// A RefusedError is the refusal of a statement the Catalog does not run:
// not one SELECT, one over a MeterStore relation, or one calling a
// function outside the allowlist. It unwraps to the *pgconn.PgError a
// client is answered with.
type RefusedError struct {
	Reason   string
	Function string // the function refused, if that is the reason
	pg       *pgconn.PgError
}

// Error says why the statement is refused.
func (e *RefusedError) Error() string { return "pgcatalog: " + e.Reason }

// Unwrap returns the PostgreSQL error response of the refusal.
func (e *RefusedError) Unwrap() error { return e.pg }

func refuse(code, format string, args ...any) *RefusedError {
	msg := fmt.Sprintf(format, args...)
	return &RefusedError{Reason: msg, pg: &pgconn.PgError{Severity: "ERROR", Code: code, Message: msg}}
}

// A route is what the analysis of a statement found.
type route struct {
	toks []token
	// catalog: it names a relation of pg_catalog or information_schema
	// or calls a catalog or session function.
	catalog bool
	// meterstore: it names a MeterStore relation, which the store answers.
	meterstore bool
	// answered are what MeterStore answers in its place: its calls of
	// version(), and its references to the session's user.
	answered []span
	err      *RefusedError
}

// A span is the tokens from to to (inclusive) of a call or reference
// that MeterStore answers itself: version, or a session user's word
// (current_user).
type span struct {
	from, to int
	what     string
}

// analyse reads sql as a PostgreSQL statement for routing. The schemas
// are the declared tables' and system.
func analyse(sql string, schemas map[string]bool) route {
	toks, err := lex(sql)
	if err != nil {
		return route{err: refuse("42601", "the statement cannot be read as PostgreSQL's SQL")}
	}
	for len(toks) > 0 && toks[len(toks)-1].text == ";" && toks[len(toks)-1].kind == tokPunct {
		toks = toks[:len(toks)-1]
	}
	r := route{toks: toks}
	first := 0
	for first < len(toks) && toks[first].kind == tokPunct && toks[first].text == "(" {
		first++
	}
	if first == len(toks) || toks[first].kind != tokName || toks[first].quoted ||
		(toks[first].text != "select" && toks[first].text != "with") {
		r.err = refuse("0A000", "only a SELECT reads the catalog")
		return r
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.kind == tokPunct && t.text == ";" {
			r.err = refuse("42601", "one statement at a time")
			return r
		}
		if t.kind != tokName {
			continue
		}
		if !t.quoted && writes[t.text] {
			r.err = refuse("25006", "%s: the catalog is read only", strings.ToUpper(t.text))
			return r
		}
		// The parts of a chain are read with its first; a name after a
		// dot that no chain took ((x).f) is read as a chain of its own.
		parts, end := chain(toks, i)
		if end+1 < len(toks) && toks[end+1].kind == tokPunct && toks[end+1].text == "(" {
			if err := r.call(toks, i, end, parts); err != nil {
				r.err = err
				return r
			}
		} else {
			if len(parts) == 1 && !t.quoted && sessionUser[t.text] {
				r.answered = append(r.answered, span{from: i, to: i, what: t.text})
			}
			r.name(parts, t.quoted, schemas)
			if low := strings.ToLower(parts[len(parts)-1].text); runtimeRelation(low) {
				r.err = refuse("42501", "%s tells of the PostgreSQL cluster the catalog runs on, not of MeterStore", low)
				return r
			}
		}
		i = end
	}
	return r
}

// chain returns the dotted name that starts at toks[i], its parts, and
// the index of its last token.
func chain(toks []token, i int) (parts []token, end int) {
	parts = []token{toks[i]}
	end = i
	for end+2 < len(toks) && toks[end+1].kind == tokPunct && toks[end+1].text == "." && toks[end+2].kind == tokName {
		parts = append(parts, toks[end+2])
		end += 2
	}
	return parts, end
}

// call checks a name followed by a parenthesis, toks[start..end]: a
// function of the allowlist, a word of the syntax, or an alias's column
// list after AS.
func (r *route) call(toks []token, start, end int, parts []token) *RefusedError {
	if start > 0 && toks[start-1].kind == tokName && !toks[start-1].quoted && toks[start-1].text == "as" {
		return nil
	}
	fn := parts[len(parts)-1]
	switch {
	case len(parts) > 2 || (len(parts) == 2 && parts[0].text != "pg_catalog"):
		return refusedFunc(parts)
	case len(parts) == 1 && !fn.quoted && syntax[fn.text]:
		return nil
	case catalogFuncs[fn.text]:
		r.catalog = true
		if fn.text == "version" && end+2 < len(toks) && toks[end+2].kind == tokPunct && toks[end+2].text == ")" {
			r.answered = append(r.answered, span{from: start, to: end + 2, what: "version"})
		}
		return nil
	case plainFuncs[fn.text]:
		return nil
	}
	return refusedFunc(parts)
}

func refusedFunc(parts []token) *RefusedError {
	names := make([]string, len(parts))
	for i, p := range parts {
		names[i] = p.text
	}
	name := strings.Join(names, ".")
	e := refuse("42501", "function %s is not one a catalog query may call", name)
	e.Function = name
	return e
}

// name notes what a dotted name that is not called refers to: a
// MeterStore relation (a table's schema or system as a qualifier, or a
// relation's name alone), or PostgreSQL's catalog. An alias that happens
// to be a table's name counts as the table: the statement then goes to
// the store, which refuses it rather than answering it wrongly.
func (r *route) name(parts []token, quoted bool, schemas map[string]bool) {
	for i, p := range parts {
		low := strings.ToLower(p.text)
		last := i == len(parts)-1
		switch {
		case !last && schemas[low]:
			r.meterstore = true
		case !last && catalogSchemas[low]:
			r.catalog = true
		case len(parts) == 1 && isRelation(low):
			r.meterstore = true
		case last && catalogTypes[low]:
			r.catalog = true
		case len(parts) == 1 && !quoted && bareCatalog[low]:
			r.catalog = true
		case len(parts) == 1 && strings.HasPrefix(low, "pg_"):
			r.catalog = true
		}
	}
}

func isRelation(name string) bool {
	for _, r := range relations {
		if name == r {
			return true
		}
	}
	return false
}

// handled reports whether the route is a catalog statement this package
// runs.
func (r *route) handled() bool { return r.err == nil && r.catalog && !r.meterstore }

// refusal is the reason a route is not run here, nil if it is.
func (r *route) refusal() error {
	switch {
	case r.err != nil:
		return r.err
	case r.meterstore:
		return refuse("42501", "a statement over a MeterStore table is answered by the store, not by the catalog")
	case !r.catalog:
		return refuse("0A000", "not a catalog statement")
	}
	return nil
}

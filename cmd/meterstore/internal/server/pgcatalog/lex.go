package pgcatalog

// A lexer of PostgreSQL's SQL, as far as routing needs it: names, literals
// (whose text is never a name), parameters, punctuation and operators.
// What it cannot read whole (an unterminated literal or comment) is an
// error, and the statement is not routed here.

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// tokKind is what a token is.
type tokKind int

const (
	tokName   tokKind = iota // an identifier or keyword; text lowercased unless quoted
	tokString                // a string literal, of any kind; text is its source
	tokNumber
	tokParam // $1
	tokPunct // ( ) , ; . [ ] :
	tokOp    // any other operator
)

type token struct {
	kind   tokKind
	text   string
	quoted bool // a "quoted" identifier
	pos    int  // where it starts in the statement
	end    int  // where it ends
}

var errLex = errors.New("pgcatalog: statement cannot be read")

// lex splits sql into tokens, dropping comments and white space.
func lex(sql string) ([]token, error) {
	var out []token
	i := 0
	for i < len(sql) {
		c, start, n := sql[i], i, len(out)
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case strings.HasPrefix(sql[i:], "--"):
			j := strings.IndexByte(sql[i:], '\n')
			if j < 0 {
				return out, nil
			}
			i += j + 1
		case strings.HasPrefix(sql[i:], "/*"):
			// Comments nest in PostgreSQL.
			depth, j := 0, i
			for {
				if j+1 >= len(sql) {
					return nil, errLex
				}
				if sql[j] == '/' && sql[j+1] == '*' {
					depth++
					j += 2
				} else if sql[j] == '*' && sql[j+1] == '/' {
					depth--
					j += 2
					if depth == 0 {
						break
					}
				} else {
					j++
				}
			}
			i = j
		case c == '\'':
			j, err := quoted(sql, i, '\'', false)
			if err != nil {
				return nil, err
			}
			out = append(out, token{kind: tokString, text: sql[i:j]})
			i = j
		case (c == 'e' || c == 'E') && i+1 < len(sql) && sql[i+1] == '\'':
			j, err := quoted(sql, i+1, '\'', true)
			if err != nil {
				return nil, err
			}
			out = append(out, token{kind: tokString, text: sql[i:j]})
			i = j
		case (c == 'b' || c == 'B' || c == 'x' || c == 'X' || c == 'n' || c == 'N') && i+1 < len(sql) && sql[i+1] == '\'':
			j, err := quoted(sql, i+1, '\'', false)
			if err != nil {
				return nil, err
			}
			out = append(out, token{kind: tokString, text: sql[i:j]})
			i = j
		case (c == 'u' || c == 'U') && i+2 < len(sql) && sql[i+1] == '&' && (sql[i+2] == '\'' || sql[i+2] == '"'):
			// Unicode escapes: the UESCAPE clause that may follow is
			// lexed as a name and a string, which is harmless.
			j, err := quoted(sql, i+2, sql[i+2], false)
			if err != nil {
				return nil, err
			}
			if sql[i+2] == '"' {
				out = append(out, token{kind: tokName, text: sql[i+2 : j], quoted: true})
			} else {
				out = append(out, token{kind: tokString, text: sql[i:j]})
			}
			i = j
		case c == '"':
			j, err := quoted(sql, i, '"', false)
			if err != nil {
				return nil, err
			}
			name := strings.ReplaceAll(sql[i+1:j-1], `""`, `"`)
			out = append(out, token{kind: tokName, text: name, quoted: true})
			i = j
		case c == '$' && i+1 < len(sql) && isDigit(sql[i+1]):
			j := i + 1
			for j < len(sql) && isDigit(sql[j]) {
				j++
			}
			out = append(out, token{kind: tokParam, text: sql[i:j]})
			i = j
		case c == '$':
			// A dollar-quoted string: $tag$ ... $tag$.
			j := i + 1
			for j < len(sql) && isIdent(sql[j]) && !isDigit(sql[j]) {
				j++
			}
			if j >= len(sql) || sql[j] != '$' {
				return nil, errLex
			}
			tag := sql[i : j+1]
			end := strings.Index(sql[j+1:], tag)
			if end < 0 {
				return nil, errLex
			}
			k := j + 1 + end + len(tag)
			out = append(out, token{kind: tokString, text: sql[i:k]})
			i = k
		case isDigit(c) || (c == '.' && i+1 < len(sql) && isDigit(sql[i+1])):
			j := i
			for j < len(sql) && (isIdent(sql[j]) || sql[j] == '.' ||
				((sql[j] == '+' || sql[j] == '-') && (sql[j-1] == 'e' || sql[j-1] == 'E'))) {
				j++
			}
			out = append(out, token{kind: tokNumber, text: sql[i:j]})
			i = j
		case isIdentStart(c) || c >= utf8.RuneSelf:
			j := i
			for j < len(sql) && (isIdent(sql[j]) || sql[j] == '$' || sql[j] >= utf8.RuneSelf) {
				j++
			}
			out = append(out, token{kind: tokName, text: strings.ToLower(sql[i:j])})
			i = j
		case strings.IndexByte("(),;.[]:", c) >= 0:
			if c == ':' && i+1 < len(sql) && sql[i+1] == ':' {
				out = append(out, token{kind: tokOp, text: "::"})
				i += 2
			} else {
				out = append(out, token{kind: tokPunct, text: string(c)})
				i++
			}
		case strings.IndexByte("+-*/<>=~!@#%^&|`?", c) >= 0:
			j := i
			for j < len(sql) && strings.IndexByte("+-*/<>=~!@#%^&|`?", sql[j]) >= 0 &&
				!strings.HasPrefix(sql[j:], "--") && !strings.HasPrefix(sql[j:], "/*") {
				j++
			}
			out = append(out, token{kind: tokOp, text: sql[i:j]})
			i = j
		default:
			return nil, errLex
		}
		if len(out) > n {
			out[n].pos, out[n].end = start, i
		}
	}
	return out, nil
}

// quoted returns the end of the literal quoted by q that starts at i;
// backslash escapes the next byte in an E” string.
func quoted(sql string, i int, q byte, backslash bool) (int, error) {
	for j := i + 1; j < len(sql); j++ {
		switch {
		case backslash && sql[j] == '\\':
			j++
		case sql[j] == q:
			if j+1 < len(sql) && sql[j+1] == q {
				j++
				continue
			}
			return j + 1, nil
		}
	}
	return 0, errLex
}

func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool { return c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z') }
func isIdent(c byte) bool      { return isIdentStart(c) || isDigit(c) }

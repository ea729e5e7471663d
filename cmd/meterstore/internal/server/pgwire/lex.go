package pgwire

import "strings"

// A token is a word of a session statement: an identifier or keyword, a
// string literal (quoted), a quoted identifier, or a punctuation mark.
type token struct {
	text   string
	quoted bool // a string literal or a quoted identifier
}

// is reports whether t is the unquoted word w, case-insensitively.
func (t token) is(w string) bool { return !t.quoted && strings.EqualFold(t.text, w) }

// maxTokens bounds the words a session statement is read into: such
// statements are short, and anything longer is no session statement.
const maxTokens = 256

// lex splits sql into tokens, skipping comments; ok is false for an
// unterminated quote or comment or past maxTokens.
func lex(sql string) (toks []token, ok bool) {
	for i := 0; i < len(sql); {
		if len(toks) > maxTokens {
			return nil, false
		}
		c := sql[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case strings.HasPrefix(sql[i:], "--"):
			j := strings.IndexByte(sql[i:], '\n')
			if j < 0 {
				return toks, true
			}
			i += j + 1
		case strings.HasPrefix(sql[i:], "/*"):
			j := strings.Index(sql[i+2:], "*/")
			if j < 0 {
				return nil, false
			}
			i += j + 4
		case c == '\'' || c == '"':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(sql) {
					return nil, false
				}
				if sql[j] == c {
					if j+1 < len(sql) && sql[j+1] == c {
						b.WriteByte(c)
						j += 2
						continue
					}
					break
				}
				b.WriteByte(sql[j])
				j++
			}
			toks = append(toks, token{text: b.String(), quoted: true})
			i = j + 1
		case strings.IndexByte("=,;()", c) >= 0:
			toks = append(toks, token{text: string(c)})
			i++
		default:
			j := i
			for j < len(sql) && strings.IndexByte(" \t\n\r\f=,;()'\"", sql[j]) < 0 {
				j++
			}
			toks = append(toks, token{text: sql[i:j]})
			i = j
		}
	}
	return toks, true
}

// oneStatement returns toks without a trailing semicolon, or ok false if
// another statement follows it.
func oneStatement(toks []token) ([]token, bool) {
	for i, t := range toks {
		if t.text == ";" && !t.quoted {
			for _, rest := range toks[i+1:] {
				if rest.text != ";" || rest.quoted {
					return nil, false
				}
			}
			return toks[:i], true
		}
	}
	return toks, true
}

package main

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// What the command prints from outside (a file name, an object's key in
// the warehouse, a snapshot summary a foreign writer made, a value in a
// table, an error quoting any of them) may hold control characters: an
// escape sequence would recolour the terminal, move the cursor or rewrite
// what was printed before it, a carriage return or a bidirectional
// override would make a line say something else. Such text is printed
// escaped, as Go escapes it in a quoted string.

// hostile reports whether r must not reach a terminal as it is: a control
// character (U+0000 to U+001F, U+007F to U+009F) or a bidirectional
// control (U+202A to U+202E, U+2066 to U+2069, ...).
func hostile(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
}

// printable returns s with every hostile rune but those keep keeps, and
// every byte that is not UTF-8, escaped: \x1b, \u202e, \xff.
func printable(s string, keep ...rune) string {
	clean := func(s string) bool {
		for _, r := range s {
			if r == utf8.RuneError || (hostile(r) && !strings.ContainsRune(string(keep), r)) {
				return false
			}
		}
		return true
	}
	if clean(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case hostile(r) && !strings.ContainsRune(string(keep), r):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// shownError returns an error's text as printed on a line of its own: its
// line breaks and tabs kept, which messages use, anything else escaped.
func shownError(err error) string { return printable(err.Error(), '\n', '\t') }

// shownName returns a name from outside (a file, an object) as a line that
// names it prints it: as it is if it is plain text, else quoted with its
// control characters escaped, so that a line break in it cannot start a
// line of its own.
func shownName(s string) string {
	if printable(s) == s {
		return s
	}
	return strconv.Quote(s)
}

// printableCells returns cells made printable in place.
func printableCells(cells []string) []string {
	for i, c := range cells {
		cells[i] = printable(c)
	}
	return cells
}

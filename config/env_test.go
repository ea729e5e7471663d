package config

import (
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	env := mapEnv(map[string]string{"HOST": "db", "EMPTY": "", "A_1": "x"})
	for _, tc := range []struct{ in, want string }{
		{"postgres://${HOST}/m", "postgres://db/m"},
		{"${HOST}${A_1}", "dbx"},
		{"a${EMPTY}b", "ab"},
		{"pa$$word$x", "pa$$word$x"},
		{"$${HOST}", "${HOST}"},
		{"no braces {HOST}", "no braces {HOST}"},
	} {
		got, err := expand(tc.in, env)
		if err != nil || got != tc.want {
			t.Errorf("expand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"${NOPE}", "NOPE is not set"},
		{"${NOPE}${GONE}", "NOPE, GONE are not set"},
		{"${HOST", "unterminated"},
		{"${1X}", "want a variable name"},
		{"${}", "want a variable name"},
		{"${A-B}", "want a variable name"},
	} {
		if _, err := expand(tc.in, env); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("expand(%q) error = %v; want one containing %q", tc.in, err, tc.want)
		}
	}
}

// mapEnv returns an env function that looks names up in m.
func mapEnv(m map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

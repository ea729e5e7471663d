package config

import (
	"fmt"
	"strings"
)

// expand replaces every ${NAME} in s with the value env gives NAME; $${
// stands for a literal ${. A name env does not know is an error, not an
// empty string: a typo in a variable name must not turn a connection URL
// into one that fails far from the mistake. A bare $ is left alone, so a
// password may contain one.
func expand(s string, env func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	var missing []string
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			break
		}
		if i > 0 && s[i-1] == '$' { // $${ is a literal ${
			b.WriteString(s[:i-1])
			b.WriteString("${")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("unterminated ${ in %q (write $${ for a literal ${)", s[i:])
		}
		name := s[i+2 : i+end]
		if !isVarName(name) {
			return "", fmt.Errorf("${%s}: want a variable name of letters, digits and underscores", name)
		}
		v, ok := env(name)
		if !ok {
			missing = append(missing, name)
		}
		b.WriteString(v)
		s = s[i+end+1:]
	}
	switch len(missing) {
	case 0:
		return b.String(), nil
	case 1:
		return "", fmt.Errorf("environment variable %s is not set (${%[1]s})", missing[0])
	}
	return "", fmt.Errorf("environment variables %s are not set", strings.Join(missing, ", "))
}

// isVarName reports whether s is a letter or underscore followed by
// letters, digits and underscores.
func isVarName(s string) bool {
	for i, c := range s {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return s != ""
}

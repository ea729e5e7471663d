package auth

import "strings"

// placeholders are what clients send as the token when none is configured:
// PyIceberg's REST catalog sends "Authorization: Bearer None", and
// JavaScript clients "null" or "undefined". No token that NewToken makes
// or a sensible operator picks reads so, and answering them as a wrong
// token would tell the user to fix a token they never gave.
var placeholders = []string{"None", "null", "undefined"}

// Bearer returns the token of an Authorization value "Bearer <token>"
// (the scheme in any case), and false if the value holds none: no value,
// another scheme, an empty token, or a placeholder a client sends when it
// has no credential. Every protocol of the server reads its header
// through it, so that the same request is refused the same way.
func Bearer(value string) (string, bool) {
	scheme, token, ok := strings.Cut(value, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	for _, p := range placeholders {
		if strings.EqualFold(token, p) {
			return "", false
		}
	}
	return token, token != ""
}

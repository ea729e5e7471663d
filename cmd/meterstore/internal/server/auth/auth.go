// Package auth checks the bearer tokens of meterstore serve, the
// [[server.token]] sections, for every protocol the server speaks: the
// HTTP API and Arrow Flight SQL accept the same tokens by the same rules.
package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"slices"

	"github.com/meterstore/meterstore/config"
)

// Match returns the token of tokens whose hash is that of presented. The
// presented token is hashed and compared with every configured hash in
// constant time, so neither the comparison nor the number of tokens before
// the match says how close a guess was.
func Match(tokens []config.Token, presented string) (config.Token, bool) {
	sum := sha256.Sum256([]byte(presented))
	match := -1
	for i := range tokens {
		if subtle.ConstantTimeCompare(sum[:], tokens[i].Hash[:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		return config.Token{}, false
	}
	return tokens[match], true
}

// Issuer returns the configured token that obtained a credential (an
// access token, a session) recorded for name and hash: the token of that
// name, if it still has that hash. A credential is honoured only while its
// issuer is, so removing a token, or rotating its hash under the same
// name, revokes the credentials it obtained.
func Issuer(tokens []config.Token, name string, hash [32]byte) (config.Token, bool) {
	i := slices.IndexFunc(tokens, func(t config.Token) bool { return t.Name == name })
	if i < 0 || subtle.ConstantTimeCompare(tokens[i].Hash[:], hash[:]) != 1 {
		return config.Token{}, false
	}
	return tokens[i], true
}

// HasScope reports whether t holds one of scopes; every token does when
// scopes is empty.
func HasScope(t config.Token, scopes ...string) bool {
	return len(scopes) == 0 || slices.ContainsFunc(scopes, func(s string) bool { return slices.Contains(t.Scopes, s) })
}

// MayTouch reports whether t may touch table: it lists no tables, or
// this one.
func MayTouch(t config.Token, table string) bool {
	return len(t.Tables) == 0 || slices.Contains(t.Tables, table)
}

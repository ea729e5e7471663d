package config

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
)

// NewToken returns a new bearer token, 32 bytes from crypto/rand in
// unpadded base64url, and its hash as a [[server.token]] section holds it.
func NewToken() (token, hash string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("config: a random token: %w", err)
	}
	token = base64.RawURLEncoding.EncodeToString(b)
	return token, HashToken(token), nil
}

// HashToken returns the hash of token as a [[server.token]] section holds
// it: HashPrefix and the hex digits of its SHA-256.
func HashToken(token string) string {
	return fmt.Sprintf("%s%x", HashPrefix, sha256.Sum256([]byte(token)))
}

package config

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
)

func TestNewToken(t *testing.T) {
	a, ha, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := NewToken()
	if a == b || len(a) != 43 || strings.ContainsAny(a, "+/=") {
		t.Errorf("tokens %q, %q: want two different 43-character base64url strings", a, b)
	}
	if want := fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(a))); ha != want {
		t.Errorf("hash %q; want %q", ha, want)
	}
}

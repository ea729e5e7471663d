package auth

import "testing"

// TestBearer: the token of a bearer header, and none for what holds no
// token: another scheme, an empty one, or a client's placeholder.
func TestBearer(t *testing.T) {
	for _, tc := range []struct {
		value, token string
		ok           bool
	}{
		{"Bearer abc", "abc", true},
		{"bearer  abc ", "abc", true},
		{"Bearer Nonesuch", "Nonesuch", true},
		{"", "", false},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Basic abc", "", false},
		{"Bearer None", "", false},
		{"Bearer null", "", false},
		{"Bearer undefined", "", false},
	} {
		if tok, ok := Bearer(tc.value); tok != tc.token || ok != tc.ok {
			t.Errorf("Bearer(%q) = %q, %v; want %q, %v", tc.value, tok, ok, tc.token, tc.ok)
		}
	}
}

package metering

import (
	"errors"
	"strings"
	"testing"
)

func TestParseMeLo(t *testing.T) {
	const s = "DE" + "000123" + "45678" + "90ABCDEFGHIJKLMN0123"
	if len(s) != 33 {
		t.Fatalf("test id has %d characters", len(s))
	}
	m, err := ParseMeLo(s)
	if err != nil {
		t.Fatal(err)
	}
	if m.String() != s || m.IsZero() {
		t.Errorf("String() = %q, want %q", m, s)
	}
	if m.Country() != "DE" || m.Operator() != "000123" || m.Postcode() != "45678" || m.Number() != "90ABCDEFGHIJKLMN0123" {
		t.Errorf("parts = %q %q %q %q", m.Country(), m.Operator(), m.Postcode(), m.Number())
	}
	if _, err := ParseMeLo("AT" + s[2:]); err != nil {
		t.Errorf("ParseMeLo with country AT: %v", err)
	}
	invalid := []string{
		"",
		s[:32],
		s + "0",
		"de" + s[2:],
		"D1" + s[2:],
		"DE00012A" + s[8:],
		"DE0001234567X" + s[13:],
		s[:32] + "a",
		s[:20] + "-" + s[21:],
		s[:31] + "Ä", // 33 bytes, not 33 characters
		strings.Repeat("9", 33),
	}
	for _, in := range invalid {
		if m, err := ParseMeLo(in); !errors.Is(err, ErrSyntax) || !m.IsZero() {
			t.Errorf("ParseMeLo(%q) = %q, %v; want ErrSyntax", in, m, err)
		}
	}
	var zero MeLo
	if zero.Country() != "" || zero.Number() != "" || zero.String() != "" {
		t.Error("zero MeLo has parts")
	}
}

package metering

import (
	"errors"
	"testing"
)

func TestParseMaLo(t *testing.T) {
	valid := []string{
		"41373559241", // published BDEW example
		"51238696781",
		"10000000009",
		"10000000017", // the 10th digit counts twice
		"12345678905",
		"99999999995",
	}
	for _, s := range valid {
		m, err := ParseMaLo(s)
		if err != nil || m.String() != s || m.IsZero() {
			t.Errorf("ParseMaLo(%q) = %q, %v; want it back", s, m, err)
		}
	}
	invalid := []struct {
		in   string
		want error
	}{
		{"", ErrSyntax},
		{"4137355924", ErrSyntax},
		{"413735592410", ErrSyntax},
		{"4137355924a", ErrSyntax},
		{" 41373559241", ErrSyntax},
		{"4137355924١", ErrSyntax}, // a non-ASCII digit
		{"01373559241", ErrSyntax},
		{"41373559242", ErrCheckDigit},
		{"14373559241", ErrCheckDigit}, // two adjacent digits swapped
	}
	for _, tt := range invalid {
		_, err := ParseMaLo(tt.in)
		var pe *ParseError
		if !errors.Is(err, tt.want) || !errors.As(err, &pe) || pe.Kind != "MaLo" || pe.Input != tt.in {
			t.Errorf("ParseMaLo(%q) error = %v, want a MaLo *ParseError wrapping %v", tt.in, err, tt.want)
		}
	}
}

// TestMaLoSingleDigitChanges changes every digit of valid ids to every other
// value. The BDEW rule doubles the even-position digits without reducing
// them to a digit sum, so a change by exactly 5 there keeps the sum modulo 10
// and goes unnoticed; every other change must be rejected.
func TestMaLoSingleDigitChanges(t *testing.T) {
	for _, id := range []string{"41373559241", "51238696781", "12345678905"} {
		var missed int
		for i := range 11 {
			for c := byte('0'); c <= '9'; c++ {
				if c == id[i] {
					continue
				}
				changed := id[:i] + string(c) + id[i+1:]
				_, err := ParseMaLo(changed)
				delta := int(c) - int(id[i])
				blind := i < 10 && i%2 == 1 && (delta == 5 || delta == -5)
				switch {
				case blind && err != nil:
					t.Errorf("%s: ParseMaLo(%q) = %v; the BDEW rule accepts it", id, changed, err)
				case blind:
					missed++
				case err == nil:
					t.Errorf("%s: ParseMaLo(%q) accepted a single-digit change", id, changed)
				}
			}
		}
		if missed == 0 || missed > 5 {
			t.Errorf("%s: %d undetectable changes, want 1 to 5", id, missed)
		}
	}
}

func TestMaLoFromPrefix(t *testing.T) {
	for _, s := range []string{"41373559241", "51238696781", "12345678905"} {
		m, err := MaLoFromPrefix(s[:10])
		if err != nil || m.String() != s {
			t.Errorf("MaLoFromPrefix(%q) = %q, %v; want %s", s[:10], m, err, s)
		}
	}
	// Every prefix of a sample yields an id that ParseMaLo accepts.
	for p := 1000000000; p < 9999999999; p += 7919 * 997 {
		prefix := itoa10(p)
		m, err := MaLoFromPrefix(prefix)
		if err != nil {
			t.Fatalf("MaLoFromPrefix(%q): %v", prefix, err)
		}
		if _, err := ParseMaLo(m.String()); err != nil {
			t.Fatalf("ParseMaLo(MaLoFromPrefix(%q)): %v", prefix, err)
		}
	}
	for _, bad := range []string{"", "0137355924", "413735592", "41373559241", "413735592x"} {
		if _, err := MaLoFromPrefix(bad); !errors.Is(err, ErrSyntax) {
			t.Errorf("MaLoFromPrefix(%q) error = %v, want ErrSyntax", bad, err)
		}
	}
}

func itoa10(n int) string {
	b := make([]byte, 10)
	for i := 9; i >= 0; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b)
}

func FuzzParseMaLo(f *testing.F) {
	for _, s := range []string{"41373559241", "41373559242", "", "0000000000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMaLo(s)
		if err != nil {
			if !m.IsZero() {
				t.Fatalf("ParseMaLo(%q) failed but returned %q", s, m)
			}
			return
		}
		if m.String() != s {
			t.Fatalf("ParseMaLo(%q).String() = %q", s, m)
		}
		if again, err := MaLoFromPrefix(s[:10]); err != nil || again != m {
			t.Fatalf("MaLoFromPrefix(%q) = %q, %v; want %q", s[:10], again, err, m)
		}
	})
}

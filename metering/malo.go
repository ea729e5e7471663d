package metering

// A MaLo is a market location id (Marktlokations-ID): eleven digits, the
// first non-zero and the last a check digit over the other ten.
// The zero MaLo holds no id; it prints and marshals as empty text.
type MaLo struct{ id string }

// ParseMaLo parses an eleven-digit market location id and verifies its check
// digit; a mismatch is reported with ErrCheckDigit. The check catches most
// typing errors but, by the rule's design, not all of them.
func ParseMaLo(s string) (MaLo, error) {
	const kind = "MaLo"
	if len(s) != 11 || !isDigits(s) {
		return MaLo{}, parseError(kind, s, ErrSyntax, "want 11 digits")
	}
	if s[0] == '0' {
		return MaLo{}, parseError(kind, s, ErrSyntax, "first digit is 0")
	}
	// The error does not name the expected digit: a mismatch means some
	// digit is wrong, and suggesting the last one invites a wrong "fix".
	if maloCheckDigit(s[:10]) != s[10] {
		return MaLo{}, parseError(kind, s, ErrCheckDigit, "")
	}
	return MaLo{id: s}, nil
}

// MaLoFromPrefix completes ten leading digits with their check digit, for
// issuing ids and generating test data.
func MaLoFromPrefix(prefix string) (MaLo, error) {
	if len(prefix) != 10 || !isDigits(prefix) || prefix[0] == '0' {
		return MaLo{}, parseError("MaLo prefix", prefix, ErrSyntax, "want 10 digits, the first non-zero")
	}
	return MaLo{id: prefix + string(maloCheckDigit(prefix))}, nil
}

// maloCheckDigit applies the BDEW rule to ten digits: the digits at odd
// positions count once, those at even positions twice, and the check digit
// tops the sum up to a multiple of ten. Unlike Luhn, a doubled digit is not
// reduced to its digit sum, so the rule cannot see a change by 5 at an even
// position; it is kept as published because issued ids follow it.
func maloCheckDigit(prefix string) byte {
	sum := 0
	for i := 0; i < 10; i++ {
		d := int(prefix[i] - '0')
		if i%2 == 1 { // 0-based odd index: 2nd, 4th, ... digit
			d *= 2
		}
		sum += d
	}
	return byte('0' + (10-sum%10)%10)
}

// String returns the eleven digits, or "" for the zero MaLo.
func (m MaLo) String() string { return m.id }

// IsZero reports whether m is the zero MaLo, which holds no id.
func (m MaLo) IsZero() bool { return m.id == "" }

// MarshalText implements encoding.TextMarshaler.
func (m MaLo) MarshalText() ([]byte, error) { return []byte(m.id), nil }

// UnmarshalText implements encoding.TextUnmarshaler; empty text yields the
// zero MaLo.
func (m *MaLo) UnmarshalText(text []byte) error {
	if len(text) == 0 {
		*m = MaLo{}
		return nil
	}
	v, err := ParseMaLo(string(text))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

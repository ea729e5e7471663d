package metering

// A MeLo is a metering location id (Messlokations-ID, formerly
// Zählpunktbezeichnung): 33 characters made of a country code, a network
// operator code, a postcode and a 20-character meter point number.
// The zero MeLo holds no id; it prints and marshals as empty text.
type MeLo struct{ id string }

// ParseMeLo parses a metering location id: two uppercase letters, six digits,
// five digits, then twenty uppercase letters or digits. The id carries no
// check digit, so only its shape is verified.
func ParseMeLo(s string) (MeLo, error) {
	const kind = "MeLo"
	if len(s) != 33 {
		return MeLo{}, parseError(kind, s, ErrSyntax, "want 33 characters")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		upper, digit := 'A' <= c && c <= 'Z', '0' <= c && c <= '9'
		var ok bool
		switch {
		case i < 2:
			ok = upper
		case i < 13:
			ok = digit
		default:
			ok = upper || digit
		}
		if !ok {
			return MeLo{}, parseError(kind, s, ErrSyntax, "want country letters, 11 digits, 20 uppercase letters or digits")
		}
	}
	return MeLo{id: s}, nil
}

// String returns the 33 characters, or "" for the zero MeLo.
func (m MeLo) String() string { return m.id }

// IsZero reports whether m is the zero MeLo, which holds no id.
func (m MeLo) IsZero() bool { return m.id == "" }

// Country returns the two-letter country code, such as "DE".
func (m MeLo) Country() string { return m.part(0, 2) }

// Operator returns the six-digit code of the network operator that issued the id.
func (m MeLo) Operator() string { return m.part(2, 8) }

// Postcode returns the five-digit postcode of the location.
func (m MeLo) Postcode() string { return m.part(8, 13) }

// Number returns the twenty-character meter point number.
func (m MeLo) Number() string { return m.part(13, 33) }

// part slices the id, tolerating the zero MeLo.
func (m MeLo) part(from, to int) string {
	if m.id == "" {
		return ""
	}
	return m.id[from:to]
}

// MarshalText implements encoding.TextMarshaler.
func (m MeLo) MarshalText() ([]byte, error) { return []byte(m.id), nil }

// UnmarshalText implements encoding.TextUnmarshaler; empty text yields the
// zero MeLo.
func (m *MeLo) UnmarshalText(text []byte) error {
	if len(text) == 0 {
		*m = MeLo{}
		return nil
	}
	v, err := ParseMeLo(string(text))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

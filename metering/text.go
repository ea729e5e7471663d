package metering

import "fmt"

// isDigits reports whether s consists of ASCII digits only.
func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// textEnum is the shape shared by the small code types of this package:
// values 1 through some last constant, 0 meaning "not set".
type textEnum interface {
	~uint8
	String() string
}

// parseEnum returns the value in [1, last] whose canonical text is s.
func parseEnum[T textEnum](kind, s string, last T) (T, error) {
	for v := T(1); v <= last; v++ {
		if v.String() == s {
			return v, nil
		}
	}
	return 0, parseError(kind, s, ErrUnknown, "")
}

// marshalEnum renders v as text. The zero value becomes empty text, as for
// netip.Addr, so an optional field survives a round trip.
func marshalEnum[T textEnum](kind string, v, last T) ([]byte, error) {
	if v == 0 {
		return []byte{}, nil
	}
	if v > last {
		return nil, fmt.Errorf("metering: cannot marshal invalid %s %d", kind, uint8(v))
	}
	return []byte(v.String()), nil
}

// unmarshalEnum is the inverse of marshalEnum.
func unmarshalEnum[T textEnum](kind string, text []byte, last T, dst *T) error {
	if len(text) == 0 {
		*dst = 0
		return nil
	}
	v, err := parseEnum(kind, string(text), last)
	if err != nil {
		return err
	}
	*dst = v
	return nil
}

// values returns the values 1 through last of a code type.
func values[T textEnum](last T) []T {
	out := make([]T, 0, last)
	for v := T(1); v <= last; v++ {
		out = append(out, v)
	}
	return out
}

// Commodities returns every defined Commodity, in order.
func Commodities() []Commodity { return values(Water) }

// Units returns every defined Unit, in order.
func Units() []Unit { return values(CubicMetre) }

// Qualities returns every defined Quality, in order.
func Qualities() []Quality { return values(Provisional) }

// Resolutions returns every defined Resolution, finest first.
func Resolutions() []Resolution { return values(Year) }

// Spellings returns the canonical spelling of each value, in order.
func Spellings[T fmt.Stringer](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.String()
	}
	return out
}

package metering

import "strconv"

// A Commodity is the energy or supply a series measures, the Sparte of
// German market communication. The zero Commodity means "not set".
type Commodity uint8

// The commodities, written in their canonical German codes.
const (
	Electricity Commodity = iota + 1 // STROM
	Gas                              // GAS
	Heat                             // WAERME
	Water                            // WASSER
)

// ParseCommodity parses a canonical code: STROM, GAS, WAERME or WASSER.
// Other spellings are rejected with ErrUnknown rather than normalized.
func ParseCommodity(s string) (Commodity, error) { return parseEnum("commodity", s, Water) }

// Valid reports whether c is one of the defined Commodity values; the zero
// value, "not set", is not.
func (c Commodity) Valid() bool { return c >= 1 && c <= Water }

// String returns the canonical code, such as "STROM".
func (c Commodity) String() string {
	switch c {
	case Electricity:
		return "STROM"
	case Gas:
		return "GAS"
	case Heat:
		return "WAERME"
	case Water:
		return "WASSER"
	}
	return "Commodity(" + strconv.Itoa(int(c)) + ")"
}

// MarshalText implements encoding.TextMarshaler; the zero Commodity is empty text.
func (c Commodity) MarshalText() ([]byte, error) { return marshalEnum("commodity", c, Water) }

// UnmarshalText implements encoding.TextUnmarshaler; empty text yields the zero Commodity.
func (c *Commodity) UnmarshalText(text []byte) error {
	return unmarshalEnum("commodity", text, Water, c)
}

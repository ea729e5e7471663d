package metering

import "strconv"

// A Unit is the physical unit of a value. The zero Unit means "not set".
type Unit uint8

// The units, with their canonical spelling. Volumes are written m3 rather
// than m³ so the code stays ASCII.
const (
	WattHour     Unit = iota + 1 // Wh
	KilowattHour                 // kWh
	MegawattHour                 // MWh
	Watt                         // W
	Kilowatt                     // kW
	Megawatt                     // MW
	KilovarHour                  // kvarh
	Kilovar                      // kvar
	CubicMetre                   // m3
)

// ParseUnit parses a canonical unit spelling such as "kWh"; case matters,
// since "MWh" and "mWh" differ by nine orders of magnitude.
func ParseUnit(s string) (Unit, error) { return parseEnum("unit", s, CubicMetre) }

// Valid reports whether u is one of the defined Unit values; the zero
// value, "not set", is not.
func (u Unit) Valid() bool { return u >= 1 && u <= CubicMetre }

// String returns the canonical spelling, such as "kWh".
func (u Unit) String() string {
	switch u {
	case WattHour:
		return "Wh"
	case KilowattHour:
		return "kWh"
	case MegawattHour:
		return "MWh"
	case Watt:
		return "W"
	case Kilowatt:
		return "kW"
	case Megawatt:
		return "MW"
	case KilovarHour:
		return "kvarh"
	case Kilovar:
		return "kvar"
	case CubicMetre:
		return "m3"
	}
	return "Unit(" + strconv.Itoa(int(u)) + ")"
}

// MarshalText implements encoding.TextMarshaler; the zero Unit is empty text.
func (u Unit) MarshalText() ([]byte, error) { return marshalEnum("unit", u, CubicMetre) }

// UnmarshalText implements encoding.TextUnmarshaler; empty text yields the zero Unit.
func (u *Unit) UnmarshalText(text []byte) error { return unmarshalEnum("unit", text, CubicMetre, u) }

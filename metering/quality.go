package metering

import "strconv"

// A Quality says how a value came about. The codes are the quantity
// qualifiers that MSCONS messages in German market communication attach to
// each value; the store keeps the code and leaves its consequences, such as
// whether a substitute value may be settled, to the caller.
// The zero Quality means "not set".
type Quality uint8

// The quality codes, with the code as sent in MSCONS.
const (
	TrueValue   Quality = iota + 1 // 220: measured or read (wahrer Wert)
	Substitute                     // 67: replaces a missing or implausible value (Ersatzwert)
	Proposed                       // 201: offered for confirmation (Vorschlagswert)
	Unusable                       // 20: delivered but not fit for use (nicht verwendbarer Wert)
	Forecast                       // 187: a forecast, not a measurement (Prognosewert)
	Summed                         // 79: a sum of other values (Energiemenge summiert)
	Provisional                    // Z18: may still change (vorläufiger Wert)
)

// ParseQuality parses an MSCONS quality code such as "220".
func ParseQuality(s string) (Quality, error) { return parseEnum("quality", s, Provisional) }

// Valid reports whether q is one of the defined Quality values; the zero
// value, "not set", is not.
func (q Quality) Valid() bool { return q >= 1 && q <= Provisional }

// String returns the MSCONS code, such as "220".
func (q Quality) String() string {
	switch q {
	case TrueValue:
		return "220"
	case Substitute:
		return "67"
	case Proposed:
		return "201"
	case Unusable:
		return "20"
	case Forecast:
		return "187"
	case Summed:
		return "79"
	case Provisional:
		return "Z18"
	}
	return "Quality(" + strconv.Itoa(int(q)) + ")"
}

// MarshalText implements encoding.TextMarshaler; the zero Quality is empty text.
func (q Quality) MarshalText() ([]byte, error) { return marshalEnum("quality", q, Provisional) }

// UnmarshalText implements encoding.TextUnmarshaler; empty text yields the zero Quality.
func (q *Quality) UnmarshalText(text []byte) error {
	return unmarshalEnum("quality", text, Provisional, q)
}

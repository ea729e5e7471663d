package metering

import (
	"errors"
	"testing"
	"time"
)

// code is what the enumerated types share, for table-driven checks.
type code interface {
	String() string
	MarshalText() ([]byte, error)
}

func TestCodes(t *testing.T) {
	tests := []struct {
		kind    string
		parse   func(string) (code, error)
		want    []string // every canonical spelling, in constant order
		invalid []string
	}{
		{
			"commodity",
			func(s string) (code, error) { return ParseCommodity(s) },
			[]string{"STROM", "GAS", "WAERME", "WASSER"},
			[]string{"", "strom", "Gas", "WÄRME", "ELECTRICITY", " GAS", "GAS "},
		},
		{
			"unit",
			func(s string) (code, error) { return ParseUnit(s) },
			[]string{"Wh", "kWh", "MWh", "W", "kW", "MW", "kvarh", "kvar", "m3"},
			[]string{"", "KWH", "kwh", "mWh", "m³", "kWh ", "var", "Kvarh"},
		},
		{
			"quality",
			func(s string) (code, error) { return ParseQuality(s) },
			[]string{"220", "67", "201", "20", "187", "79", "Z18"},
			[]string{"", "0220", "z18", "221", "W", "220 "},
		},
		{
			"resolution",
			func(s string) (code, error) { return ParseResolution(s) },
			[]string{"PT5M", "PT15M", "PT30M", "PT1H", "P1D", "P1M", "P1Y"},
			[]string{"", "PT60M", "PT0.25H", "pt15m", "PT15m", "P1DT0H", "PT24H", "P7D", "15", "PT1H0M"},
		},
	}
	for _, tt := range tests {
		for i, s := range tt.want {
			v, err := tt.parse(s)
			if err != nil || v.String() != s {
				t.Errorf("parse %s %q = %v, %v", tt.kind, s, v, err)
				continue
			}
			// Constants start at 1 and follow the documented order.
			if n := ordinal(v); n != i+1 {
				t.Errorf("%s %q has value %d, want %d", tt.kind, s, n, i+1)
			}
			if b, err := v.MarshalText(); err != nil || string(b) != s {
				t.Errorf("%s %q: MarshalText = %q, %v", tt.kind, s, b, err)
			}
		}
		for _, s := range tt.invalid {
			_, err := tt.parse(s)
			var pe *ParseError
			if !errors.Is(err, ErrUnknown) || !errors.As(err, &pe) || pe.Kind != tt.kind {
				t.Errorf("parse %s %q: error %v, want a %s *ParseError wrapping ErrUnknown", tt.kind, s, err, tt.kind)
			}
		}
	}
}

func ordinal(v code) int {
	switch v := v.(type) {
	case Commodity:
		return int(v)
	case Unit:
		return int(v)
	case Quality:
		return int(v)
	case Resolution:
		return int(v)
	}
	return -1
}

func TestInvalidCodeValues(t *testing.T) {
	tests := []struct {
		v    code
		want string
	}{
		{Commodity(0), "Commodity(0)"},
		{Commodity(5), "Commodity(5)"},
		{Unit(10), "Unit(10)"},
		{Quality(8), "Quality(8)"},
		{Resolution(8), "Resolution(8)"},
	}
	for _, tt := range tests {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
		b, err := tt.v.MarshalText()
		if ordinal(tt.v) == 0 && (err != nil || len(b) != 0) {
			t.Errorf("%s.MarshalText() = %q, %v; want empty text", tt.want, b, err)
		}
		if ordinal(tt.v) != 0 && err == nil {
			t.Errorf("%s.MarshalText() succeeded", tt.want)
		}
	}
}

func TestResolutionFixed(t *testing.T) {
	tests := []struct {
		r    Resolution
		want time.Duration
		ok   bool
	}{
		{FiveMinutes, 5 * time.Minute, true},
		{QuarterHour, 15 * time.Minute, true},
		{HalfHour, 30 * time.Minute, true},
		{Hour, time.Hour, true},
		{Day, 0, false},
		{Month, 0, false},
		{Year, 0, false},
		{0, 0, false},
	}
	for _, tt := range tests {
		got, ok := tt.r.Fixed()
		if got != tt.want || ok != tt.ok {
			t.Errorf("%v.Fixed() = %v, %v; want %v, %v", tt.r, got, ok, tt.want, tt.ok)
		}
		if tt.r != 0 && (tt.r <= Hour) != ok {
			t.Errorf("%v: ordering does not separate fixed resolutions", tt.r)
		}
	}
}

// Valid agrees with the parsers: a value is valid exactly when its
// canonical text parses back to it.
func TestValidAgreesWithParse(t *testing.T) {
	roundTrips := func(s string, v uint8, parse func(string) (uint8, error)) bool {
		w, err := parse(s)
		return err == nil && w == v
	}
	for i := 0; i < 256; i++ {
		v := uint8(i)
		cases := []struct {
			name  string
			valid bool
			rt    bool
		}{
			{"commodity", Commodity(v).Valid(), roundTrips(Commodity(v).String(), v, func(s string) (uint8, error) { c, err := ParseCommodity(s); return uint8(c), err })},
			{"unit", Unit(v).Valid(), roundTrips(Unit(v).String(), v, func(s string) (uint8, error) { c, err := ParseUnit(s); return uint8(c), err })},
			{"quality", Quality(v).Valid(), roundTrips(Quality(v).String(), v, func(s string) (uint8, error) { c, err := ParseQuality(s); return uint8(c), err })},
			{"resolution", Resolution(v).Valid(), roundTrips(Resolution(v).String(), v, func(s string) (uint8, error) { c, err := ParseResolution(s); return uint8(c), err })},
		}
		for _, c := range cases {
			if c.valid != c.rt {
				t.Errorf("%s %d: Valid() = %v, round trip %v", c.name, i, c.valid, c.rt)
			}
		}
	}
}

// The lists of defined values hold exactly the valid ones.
func TestValueLists(t *testing.T) {
	count := func(valid func(uint8) bool) int {
		n := 0
		for i := 0; i < 256; i++ {
			if valid(uint8(i)) {
				n++
			}
		}
		return n
	}
	for _, c := range []struct {
		name  string
		list  []string
		valid func(uint8) bool
	}{
		{"commodities", Spellings(Commodities()), func(v uint8) bool { return Commodity(v).Valid() }},
		{"units", Spellings(Units()), func(v uint8) bool { return Unit(v).Valid() }},
		{"qualities", Spellings(Qualities()), func(v uint8) bool { return Quality(v).Valid() }},
		{"resolutions", Spellings(Resolutions()), func(v uint8) bool { return Resolution(v).Valid() }},
	} {
		if len(c.list) != count(c.valid) {
			t.Errorf("%s: %d listed, %d valid", c.name, len(c.list), count(c.valid))
		}
	}
}

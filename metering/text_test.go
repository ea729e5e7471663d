package metering

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// record has one field of every text type, as a caller's row type would.
type record struct {
	MaLo       MaLo
	MeLo       MeLo
	OBIS       OBIS
	Commodity  Commodity
	Unit       Unit
	Quality    Quality
	Resolution Resolution
	Day        Date
}

func TestJSONRoundTrip(t *testing.T) {
	full := record{
		MaLo:       must(ParseMaLo("41373559241")),
		MeLo:       must(ParseMeLo("DE0001234567890ABCDEFGHIJKLMN0123")),
		OBIS:       must(ParseOBIS("1-0:1.8.0")),
		Commodity:  Gas,
		Unit:       KilowattHour,
		Quality:    Substitute,
		Resolution: QuarterHour,
		Day:        Date{2026, 3, 29},
	}
	const want = `{"MaLo":"41373559241","MeLo":"DE0001234567890ABCDEFGHIJKLMN0123","OBIS":"1-0:1.8.0",` +
		`"Commodity":"GAS","Unit":"kWh","Quality":"67","Resolution":"PT15M","Day":"2026-03-29"}`
	b, err := json.Marshal(full)
	if err != nil || string(b) != want {
		t.Fatalf("Marshal = %s, %v; want %s", b, err, want)
	}
	var back record
	if err := json.Unmarshal(b, &back); err != nil || back != full {
		t.Fatalf("Unmarshal = %+v, %v; want %+v", back, err, full)
	}

	// Unset fields travel as empty text and come back unset.
	empty := record{OBIS: full.OBIS}
	b, err = json.Marshal(empty)
	if err != nil {
		t.Fatal(err)
	}
	back = record{}
	if err := json.Unmarshal(b, &back); err != nil || back != empty {
		t.Fatalf("Unmarshal(%s) = %+v, %v; want %+v", b, back, err, empty)
	}
}

func TestUnmarshalTextRejects(t *testing.T) {
	tests := []struct {
		field, value string
		want         error
	}{
		{"MaLo", "41373559242", ErrCheckDigit},
		{"MeLo", "de0001234567890ABCDEFGHIJKLMN0123", ErrSyntax},
		{"OBIS", "", ErrSyntax},
		{"OBIS", "1-0:1.8.0&255", ErrSyntax},
		{"Commodity", "Strom", ErrUnknown},
		{"Unit", "KWH", ErrUnknown},
		{"Quality", "221", ErrUnknown},
		{"Resolution", "PT60M", ErrUnknown},
		{"Day", "2026-02-30", ErrRange},
	}
	for _, tt := range tests {
		var r record
		err := json.Unmarshal([]byte(`{"`+tt.field+`":"`+tt.value+`"}`), &r)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s %q: error %v, want %v", tt.field, tt.value, err, tt.want)
		}
	}
	if _, err := (Date{2026, 2, 30}).MarshalText(); err == nil {
		t.Error("MarshalText of 2026-02-30 succeeded")
	}
}

func TestParseErrorMessage(t *testing.T) {
	_, err := ParseMaLo("41373559242")
	if got, want := err.Error(), `metering: invalid MaLo "41373559242": check digit mismatch`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	_, err = ParseOBIS("1-0:1.8.256")
	if got, want := err.Error(), `metering: invalid OBIS code "1-0:1.8.256": value out of range: group E exceeds 255`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	long := strings.Repeat("x", 10000)
	_, err = ParseMeLo(long)
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Input != long || len(err.Error()) > 200 {
		t.Errorf("long input: %d-byte message, Input kept: %v", len(err.Error()), pe != nil && pe.Input == long)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

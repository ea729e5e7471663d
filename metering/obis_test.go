package metering

import (
	"errors"
	"strings"
	"testing"
)

func TestParseOBIS(t *testing.T) {
	tests := []struct {
		in, canonical string
		want          OBIS
	}{
		{"1-0:1.8.0", "1-0:1.8.0", OBIS{1, 0, 1, 8, 0, 255}},
		{"1-0:1.8.0*255", "1-0:1.8.0", OBIS{1, 0, 1, 8, 0, 255}},
		{"1-1:1.29.0", "1-1:1.29.0", OBIS{1, 1, 1, 29, 0, 255}},
		{"7-0:3.0.0", "7-0:3.0.0", OBIS{7, 0, 3, 0, 0, 255}},
		{"1-0:2.8.1*0", "1-0:2.8.1*0", OBIS{1, 0, 2, 8, 1, 0}},
		{"1-0:1.8.0*101", "1-0:1.8.0*101", OBIS{1, 0, 1, 8, 0, 101}},
		{"0-0:96.1.0*255", "0-0:96.1.0", OBIS{0, 0, 96, 1, 0, 255}},
		{"255-255:255.255.255*254", "255-255:255.255.255*254", OBIS{255, 255, 255, 255, 255, 254}},
		{"0-0:0.0.0*0", "0-0:0.0.0*0", OBIS{}},
	}
	for _, tt := range tests {
		got, err := ParseOBIS(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseOBIS(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			continue
		}
		if s := got.String(); s != tt.canonical {
			t.Errorf("ParseOBIS(%q).String() = %q, want %q", tt.in, s, tt.canonical)
		}
		if again, err := ParseOBIS(tt.canonical); err != nil || again != got {
			t.Errorf("ParseOBIS(%q) = %+v, %v; want %+v", tt.canonical, again, err, got)
		}
	}
}

func TestParseOBISInvalid(t *testing.T) {
	tests := []struct {
		in   string
		want error
	}{
		{"", ErrSyntax},
		{"1.8.0", ErrSyntax},
		{"1-0:1.8", ErrSyntax},
		{"1-0:1.8.", ErrSyntax},
		{"1-0:1.8.*", ErrSyntax},
		{"1-0:1.8.0*", ErrSyntax},
		{"1-0:1.8.0&255", ErrSyntax},
		{"1-0:1.8.0*255*1", ErrSyntax},
		{"1-0:1.8.0.0", ErrSyntax},
		{"1-0:*.8.0", ErrSyntax},
		{"1-0:C.1.0", ErrSyntax},
		{"1-0:1.8.x", ErrSyntax},
		{"1:0-1.8.0", ErrSyntax},
		{"1-0.1.8.0", ErrSyntax},
		{" 1-0:1.8.0", ErrSyntax},
		{"1-0:1.8.0 ", ErrSyntax},
		{"+1-0:1.8.0", ErrSyntax},
		{"-1-0:1.8.0", ErrSyntax},
		{"1-0:01.8.0", ErrSyntax},
		{"1-0:1.8.00", ErrSyntax},
		{"1-0:1.8.0*0255", ErrSyntax},
		{"1-0:1.8.256", ErrRange},
		{"256-0:1.8.0", ErrRange},
		{"1-0:1.8.0*1000", ErrRange},
		{"1-0:1.8." + strings.Repeat("9", 40), ErrRange},
	}
	for _, tt := range tests {
		got, err := ParseOBIS(tt.in)
		var pe *ParseError
		if !errors.Is(err, tt.want) || !errors.As(err, &pe) || pe.Kind != "OBIS code" {
			t.Errorf("ParseOBIS(%q) = %v, %v; want an OBIS *ParseError wrapping %v", tt.in, got, err, tt.want)
		}
	}
}

func TestOBISMedium(t *testing.T) {
	tests := []struct {
		code string
		want Commodity
		ok   bool
	}{
		{"1-0:1.8.0", Electricity, true},
		{"7-0:3.0.0", Gas, true},
		{"6-0:1.0.0", Heat, true},
		{"8-0:1.0.0", Water, true},
		{"9-0:1.0.0", Water, true},
		{"0-0:96.1.0", 0, false},
		{"5-0:1.0.0", 0, false},
	}
	for _, tt := range tests {
		o, err := ParseOBIS(tt.code)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := o.Medium(); got != tt.want || ok != tt.ok {
			t.Errorf("%s.Medium() = %v, %v; want %v, %v", tt.code, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzParseOBIS(f *testing.F) {
	for _, s := range []string{"1-0:1.8.0", "1-0:1.8.0*255", "1-1:1.29.0", "7-0:3.0.0*0", "255-255:255.255.255*254", "1-0:1.8.0&255", "1-0:01.8.0", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParseOBIS(s)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Input != s {
				t.Fatalf("ParseOBIS(%q) error %v is not a *ParseError for the input", s, err)
			}
			return
		}
		canonical := o.String()
		again, err := ParseOBIS(canonical)
		if err != nil || again != o || again.String() != canonical {
			t.Fatalf("ParseOBIS(%q) = %+v, canonical %q reparses as %+v, %v", s, o, canonical, again, err)
		}
		// The only second spelling is an explicit F of 255.
		if s != canonical && s != canonical+"*255" {
			t.Fatalf("ParseOBIS accepted %q, a non-canonical spelling of %q", s, canonical)
		}
	})
}

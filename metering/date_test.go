package metering

import (
	"errors"
	"testing"
	"time"
)

func TestParseDate(t *testing.T) {
	for _, s := range []string{"2026-03-29", "2024-02-29", "0001-01-01", "9999-12-31"} {
		d, err := ParseDate(s)
		if err != nil || d.String() != s || !d.IsValid() {
			t.Errorf("ParseDate(%q) = %v, %v", s, d, err)
		}
	}
	if d, _ := ParseDate("2026-03-29"); d != (Date{2026, time.March, 29}) {
		t.Errorf("ParseDate(2026-03-29) = %#v", d)
	}
	invalid := []struct {
		in   string
		want error
	}{
		{"", ErrSyntax},
		{"2026-3-29", ErrSyntax},
		{"2026/03/29", ErrSyntax},
		{"2026-03-29T00:00", ErrSyntax},
		{"+026-03-29", ErrSyntax},
		{"2026-0a-29", ErrSyntax},
		{"2025-02-29", ErrRange},
		{"2026-02-30", ErrRange},
		{"2026-13-01", ErrRange},
		{"2026-00-10", ErrRange},
		{"2026-04-00", ErrRange},
	}
	for _, tt := range invalid {
		if d, err := ParseDate(tt.in); !errors.Is(err, tt.want) {
			t.Errorf("ParseDate(%q) = %v, %v; want %v", tt.in, d, err, tt.want)
		}
	}
}

func TestDateArithmetic(t *testing.T) {
	d := Date{2026, time.December, 31}
	if got := d.AddDays(1); got != (Date{2027, time.January, 1}) {
		t.Errorf("AddDays(1) = %v", got)
	}
	if got := d.AddDays(-365); got != (Date{2025, time.December, 31}) {
		t.Errorf("AddDays(-365) = %v", got)
	}
	if got := (Date{2024, time.February, 28}).AddDays(1); got != (Date{2024, time.February, 29}) {
		t.Errorf("leap day: %v", got)
	}
	if got := (Date{2026, time.February, 30}).AddDays(0); got != (Date{2026, time.March, 2}) {
		t.Errorf("normalization: %v", got)
	}
	if (Date{2026, time.February, 30}).IsValid() || (Date{}).IsValid() {
		t.Error("IsValid accepts a day that does not exist")
	}
	if w := (Date{2026, time.March, 29}).Weekday(); w != time.Sunday {
		t.Errorf("2026-03-29 is a %v", w)
	}
	ordered := []Date{{2025, 12, 31}, {2026, 1, 1}, {2026, 1, 2}, {2026, 2, 1}}
	for i, a := range ordered {
		for j, b := range ordered {
			if got, want := a.Compare(b), cmpInt(i, j); got != want {
				t.Errorf("%v.Compare(%v) = %d, want %d", a, b, got, want)
			}
		}
	}
	if s := (Date{}).String(); s != "" {
		t.Errorf("zero Date prints %q", s)
	}
}

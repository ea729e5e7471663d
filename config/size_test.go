package config

import "testing"

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"1048576", 1 << 20},
		{"256MiB", 256 << 20},
		{"64MB", 64e6},
		{"32 KiB", 32 << 10},
		{"2gb", 2e9},
		{"1TiB", 1 << 40},
		{"7B", 7},
	} {
		got, err := ParseSize(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "-1", "MiB", "1.5GiB", "12XB", "99999999999TiB", "99999999999999999999"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d; want an error", in, got)
		}
	}
}

func TestSizeString(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0B"},
		{256 << 20, "256MiB"},
		{2e9, "2GB"},
		{1 << 31, "2GiB"},
		{1000, "1KB"},
		{1001, "1001B"},
	} {
		if got := Size(tc.n).String(); got != tc.want {
			t.Errorf("Size(%d).String() = %q; want %q", tc.n, got, tc.want)
		}
		var back Size
		if err := back.UnmarshalText([]byte(tc.want)); err != nil || int64(back) != tc.n {
			t.Errorf("UnmarshalText(%q) = %d, %v; want %d", tc.want, back, err, tc.n)
		}
	}
}

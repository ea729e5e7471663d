package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"0", 0},
		{"0s", 0},
		{"45d", 45 * day},
		{"1d12h", day + 12*time.Hour},
		{"1d0.5h", day + 30*time.Minute},
		{"15m", 15 * time.Minute},
		{"1h30m", 90 * time.Minute},
		{"500ms", 500 * time.Millisecond},
		{" 3s ", 3 * time.Second},
	} {
		got, err := ParseDuration(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "45", "-1h", "-1d", "1.5d", "d", "1x", "1d-1h", "1d+1h", "12h1d", "1d1d", "106752d", "+1h"} {
		if got, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) = %v; want an error", in, got)
		} else if !strings.HasPrefix(err.Error(), "config: ") {
			t.Errorf("ParseDuration(%q) error %q does not name the package", in, err)
		}
	}
}

func TestDurationString(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{45 * day, "45d"},
		{day + 12*time.Hour, "1d12h"},
		{15 * time.Minute, "15m"},
		{90 * time.Minute, "1h30m"},
		{time.Hour + time.Second, "1h0m1s"},
		{1500 * time.Millisecond, "1.5s"},
		{-time.Hour, "-1h"},
	} {
		if got := Duration(tc.d).String(); got != tc.want {
			t.Errorf("Duration(%v).String() = %q; want %q", tc.d, got, tc.want)
		}
		if tc.d < 0 {
			continue
		}
		var back Duration
		if err := back.UnmarshalText([]byte(tc.want)); err != nil || time.Duration(back) != tc.d {
			t.Errorf("UnmarshalText(%q) = %v, %v; want %v", tc.want, time.Duration(back), err, tc.d)
		}
	}
}

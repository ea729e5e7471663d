package config

import (
	"fmt"
	"math"
	"net/url"
	"path/filepath"
	"strings"
	"time"
)

// A value is one TOML value as the decoder found it. Decoding into a value
// cannot fail, so every problem of a file is found, not only the first.
type value struct {
	v   any
	set bool
}

// UnmarshalTOML implements toml.Unmarshaler.
func (x *value) UnmarshalTOML(v any) error {
	x.v, x.set = v, true
	return nil
}

// text returns the string at key with ${VAR} expanded; ok is false if the
// key is absent or its value is not a string.
func (r *reader) text(key string, v value) (s string, ok bool) {
	if !v.set {
		return "", false
	}
	s, ok = v.v.(string)
	if !ok {
		r.errorf(key, "want a string, not %s", describe(v.v))
		return "", false
	}
	s, err := expand(s, r.env)
	if err != nil {
		r.errorf(key, "%v", err)
		return "", false
	}
	return s, true
}

// str returns the string at key, or def if the key is absent or wrong.
func (r *reader) str(key string, v value, def string) string {
	if s, ok := r.text(key, v); ok {
		return s
	}
	return def
}

// strs returns the array of strings at key, each with ${VAR} expanded.
func (r *reader) strs(key string, v value) []string {
	if !v.set {
		return nil
	}
	a, ok := v.v.([]any)
	if !ok {
		r.errorf(key, "want an array of strings, not %s", describe(v.v))
		return nil
	}
	out := make([]string, 0, len(a))
	for i, e := range a {
		if s, ok := r.text(fmt.Sprintf("%s[%d]", key, i), value{e, true}); ok {
			out = append(out, s)
		}
	}
	return out
}

// integer returns the integer at key, which must lie in [lo, hi], or def if
// the key is absent or wrong.
func (r *reader) integer(key string, v value, def, lo, hi int) int {
	if !v.set {
		return def
	}
	n, ok := v.v.(int64)
	switch {
	case !ok:
		r.errorf(key, "want an integer, not %s", describe(v.v))
	case n < int64(lo) || n > int64(hi):
		if hi == math.MaxInt {
			r.errorf(key, "%d: want at least %d", n, lo)
		} else {
			r.errorf(key, "%d: want %d to %d", n, lo, hi)
		}
	default:
		return int(n)
	}
	return def
}

// boolean returns the boolean at key, or def if the key is absent or wrong.
func (r *reader) boolean(key string, v value, def bool) bool {
	if !v.set {
		return def
	}
	b, ok := v.v.(bool)
	if !ok {
		r.errorf(key, "want true or false, not %s", describe(v.v))
		return def
	}
	return b
}

// duration returns the duration at key, or def if the key is absent or
// wrong. A number without a unit is refused with a hint in unit, the unit
// the key is usually written in.
func (r *reader) duration(key string, v value, def time.Duration, unit string) time.Duration {
	if !v.set {
		return def
	}
	var s string
	switch x := v.v.(type) {
	case int64:
		if x == 0 {
			return 0
		}
		r.errorf(key, "duration %d has no unit; write %[1]d%s", x, unit)
		return def
	case float64:
		r.errorf(key, "duration %v has no unit; write a string such as %q", x, Duration(def).String())
		return def
	case string:
		var ok bool
		if s, ok = r.text(key, v); !ok {
			return def
		}
	default:
		r.errorf(key, "want a duration such as %q, not %s", Duration(def).String(), describe(v.v))
		return def
	}
	if t := strings.TrimSpace(s); isDigits(t) && t != "0" {
		r.errorf(key, "duration %s has no unit; write %[1]s%s", t, unit)
		return def
	}
	d, err := parseDuration(s)
	if err != nil {
		r.errorf(key, "%v", err)
		return def
	}
	return d
}

// atMost returns d, the duration at key, or def, refusing it, if it is
// longer than hi; more says what else to know.
func (r *reader) atMost(key string, d, hi, def time.Duration, more string) time.Duration {
	if d > hi && r.ok(key) {
		r.errorf(key, "%v: want at most %v%s", Duration(d), Duration(hi), more)
		return def
	}
	return d
}

// size returns the size in bytes at key, an integer or a string such as
// "256MiB", or def if the key is absent or wrong.
func (r *reader) size(key string, v value, def int64) int64 {
	if !v.set {
		return def
	}
	switch x := v.v.(type) {
	case int64:
		if x < 0 {
			r.errorf(key, "negative size %d", x)
			return def
		}
		return x
	case string:
		s, ok := r.text(key, v)
		if !ok {
			return def
		}
		n, err := parseSize(s)
		if err != nil {
			r.errorf(key, "%v", err)
			return def
		}
		return n
	}
	r.errorf(key, "want a size such as %q or a number of bytes, not %s", Size(def).String(), describe(v.v))
	return def
}

// path returns the file path at key made absolute against the
// configuration's directory, or def (so made) if the key is absent or
// wrong.
func (r *reader) path(key string, v value, def string) string {
	p := r.str(key, v, def)
	if strings.TrimSpace(p) == "" {
		r.errorf(key, "empty path")
		p = def
	}
	return r.abs(p)
}

// abs makes p absolute against the configuration's directory.
func (r *reader) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(r.dir, p)
}

// warehouseURL checks a warehouse URL and makes a file URL's path
// absolute against the configuration's directory.
func (r *reader) warehouseURL(key, s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		r.errorf(key, "%q: want a URL such as file://meterstore-data/warehouse or s3://bucket", s)
		return ""
	}
	switch scheme {
	case "file":
		if rest == "" || strings.ContainsAny(rest, "?#") {
			r.errorf(key, "%q: want file:// and a path, without query or fragment", s)
			return ""
		}
		dir := r.abs(filepath.FromSlash(rest))
		r.ownDir(key, dir)
		return (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String()
	case "s3", "gs", "azblob":
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			r.errorf(key, "%q: want %s://bucket", s, scheme)
			return ""
		}
	case "mem":
	default:
		r.errorf(key, "scheme %q: want file, s3, gs, azblob or mem", scheme)
		return ""
	}
	return s
}

// describe names the TOML type of a decoded value, for error messages.
func describe(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any, []map[string]any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return "a date or time"
}

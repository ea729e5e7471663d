package config

import "log/slog"

// A Secret is a setting that must not reach a log or a message, such as a
// secret access key. Formatted with fmt or logged with log/slog it shows
// as "[redacted]"; string(s) is its value.
type Secret string

// redacted is how a Secret shows.
const redacted = "[redacted]"

// String returns "[redacted]", or "" for an empty Secret.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString is String, for %#v.
func (s Secret) GoString() string { return s.String() }

// LogValue is String, for log/slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

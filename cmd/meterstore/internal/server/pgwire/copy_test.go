package pgwire

import (
	"bytes"
	"testing"
)

// TestCopyFormat: COPY's options as psql and pgx send them, and a row
// with a NULL, an empty string, a delimiter, a quote and a line break in
// the text and CSV formats.
func TestCopyFormat(t *testing.T) {
	row := [][]byte{nil, {}, []byte("a,b"), []byte(`say "x"`), []byte("l1\nl2\tz\\")}
	for _, tc := range []struct{ opts, want string }{
		{"", "\\N\t\ta,b\tsay \"x\"\tl1\\nl2\\tz\\\\\n"},
		{"WITH (FORMAT csv, HEADER)", ",\"\",\"a,b\",\"say \"\"x\"\"\",\"l1\nl2\tz\\\"\n"},
		{"with csv header", ",\"\",\"a,b\",\"say \"\"x\"\"\",\"l1\nl2\tz\\\"\n"},
		{"WITH (FORMAT csv, DELIMITER ';', NULL 'NULL')", "NULL;;a,b;\"say \"\"x\"\"\";\"l1\nl2\tz\\\"\n"},
	} {
		f, err := copyOptions(tc.opts)
		if err != nil {
			t.Fatalf("%q: %v", tc.opts, err)
		}
		var b bytes.Buffer
		f.write(&b, row)
		if b.String() != tc.want {
			t.Errorf("%q:\n%q\nwant\n%q", tc.opts, b.String(), tc.want)
		}
	}
	for _, bad := range []string{"WITH (FORMAT binary)", "BINARY", "WITH (FREEZE)", "(FORMAT csv", "; SELECT 1"} {
		if _, err := copyOptions(bad); err == nil {
			t.Errorf("COPY options %q taken", bad)
		}
	}
}

package edifact

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// FuzzParse: no input panics, every refusal names a segment, and ReadAll
// refuses a segment past MaxSegmentBytes exactly where Parse does.
func FuzzParse(f *testing.F) {
	long := strings.Replace(good, "BGM+7+DOC2+9'", "BGM+7+"+strings.Repeat("?+", MaxSegmentBytes/2)+"+9'", 1)
	for _, s := range []string{
		good, "UNA:+.? '", "UNA", "UNB", "UNA:+.? 'UNB+UNOC:3+A+B+1+R'UNH+1+X'?", "UNB+UNOC:3+A+B+1+R'UNZ+0+R'",
		"UNA::::::", "UNB+UNOC:3+A+B+1+R'UNH'UNT'UNZ+1+R'", "UNA:+.? 'UNB+UNOC:3+A+B+1+R'UNH+1'UNH+1'UNZ+x+R'",
		long, strings.Replace(long, "?+?+", "?+?", 1), "UNB" + strings.Repeat("'", 3) + strings.Repeat("x", MaxSegmentBytes+1),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ic, err := Parse(data)
		read, rerr := ReadAll(bytes.NewReader(data))
		var parsed, streamed *SyntaxError
		switch {
		case errors.As(rerr, &streamed) && err == nil:
			t.Fatalf("ReadAll refuses what Parse accepts: %v", rerr)
		case rerr == nil && !bytes.Equal(read, data):
			t.Fatalf("ReadAll read %d bytes of %d", len(read), len(data))
		case errors.Is(err, errSegmentTooLong) && (!errors.As(rerr, &streamed) || !errors.As(err, &parsed) || streamed.Position != parsed.Position):
			t.Fatalf("Parse refuses %v, ReadAll %v", err, rerr)
		}
		if err != nil {
			var se *SyntaxError
			if !errors.Is(err, ErrNotEDIFACT) && !errors.As(err, &se) {
				t.Fatalf("refusal without a segment: %v", err)
			}
			return
		}
		for _, m := range ic.Messages {
			if m.Err != nil && (m.Err.Segment < 1 || m.Err.Segment > len(m.Segments)+1) {
				t.Fatalf("refusal names segment %d of %d: %v", m.Err.Segment, len(m.Segments), m.Err)
			}
		}
	})
}

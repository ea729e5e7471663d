package edifact

import (
	"errors"
	"testing"
)

// FuzzParse: no input panics, and every refusal names a segment.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		good, "UNA:+.? '", "UNA", "UNB", "UNA:+.? 'UNB+UNOC:3+A+B+1+R'UNH+1+X'?", "UNB+UNOC:3+A+B+1+R'UNZ+0+R'",
		"UNA::::::", "UNB+UNOC:3+A+B+1+R'UNH'UNT'UNZ+1+R'", "UNA:+.? 'UNB+UNOC:3+A+B+1+R'UNH+1'UNH+1'UNZ+x+R'",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ic, err := Parse(data)
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

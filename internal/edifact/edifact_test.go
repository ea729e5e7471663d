package edifact

import (
	"errors"
	"strings"
	"testing"
)

// msg is a minimal message of n segments with reference ref.
const good = "UNA:+.? 'UNB+UNOC:3+9900000000003:500+9900000000010:500+260330:1015+IC1++TL'" +
	"UNH+M1+MSCONS:D:04B:UN:2.4c'BGM+7+DOC?+1?:2+9'FTX+ACB+++a?'b??c'UNT+4+M1'" +
	"UNH+M2+MSCONS:D:04B:UN:2.4c'BGM+7+DOC2+9'UNT+3+M2'UNZ+2+IC1'"

func TestParse(t *testing.T) {
	for name, in := range map[string]string{
		"one line":    good,
		"line breaks": strings.ReplaceAll(strings.ReplaceAll(good, "'", "'\r\n"), "?'\r\n", "?'"),
		"no UNA":      strings.TrimPrefix(good, "UNA:+.? '"),
	} {
		t.Run(name, func(t *testing.T) {
			ic, err := Parse([]byte(in))
			if err != nil {
				t.Fatal(err)
			}
			if ic.Ref != "IC1" || ic.Sender != "9900000000003" || len(ic.Messages) != 2 {
				t.Fatalf("interchange %+v", ic)
			}
			m := ic.Messages[0]
			if m.Err != nil || m.Ref != "M1" || strings.Join(m.Type, ":") != "MSCONS:D:04B:UN:2.4c" || len(m.Segments) != 4 {
				t.Fatalf("message %+v", m)
			}
			// Escaped separators are data: ?+ ?: ?' ??.
			if got := m.Segments[1].Element(1, 0); got != "DOC+1:2" {
				t.Errorf("BGM document %q, want DOC+1:2", got)
			}
			if got := m.Segments[2].Element(3, 0); got != "a'b?c" {
				t.Errorf("FTX text %q, want a'b?c", got)
			}
			if m.Segments[1].Position != 3 {
				t.Errorf("BGM at position %d, want 3", m.Segments[1].Position)
			}
		})
	}
}

func TestParseOtherDelimiters(t *testing.T) {
	in := "UNA|*,# !UNB*UNOC|3*A*B*260330|1015*R1!UNH*1*MSCONS|D|04B|UN|2.4c!QTY*220|1,5#*x!UNT*3*1!UNZ*1*R1!"
	ic, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if d := ic.Delimiters; d.Decimal != ',' || d.Segment != '!' {
		t.Errorf("delimiters %+v", d)
	}
	if got := ic.Messages[0].Segments[1].Element(0, 1); got != "1,5*x" {
		t.Errorf("QTY value %q, want 1,5*x", got)
	}
}

// TestParseRefusals: every broken envelope is refused, the interchange's
// whole, or the message's alone, naming the segment.
func TestParseRefusals(t *testing.T) {
	interchange := map[string]struct{ in, want string }{
		"not EDIFACT":      {"malo_id,obis\n", "does not start with UNA or UNB"},
		"short UNA":        {"UNA:+", "shorter"},
		"UNA two roles":    {"UNA::.? 'UNB'", "two roles"},
		"UNA letter":       {"UNAx+.? 'UNB'", "cannot be a delimiter"},
		"no UNB":           {"UNA:+.? 'UNH+1'", "does not start with UNB"},
		"syntax version 4": {strings.Replace(good, "UNOC:3", "UNOC:4", 1), "syntax version \"4\""},
		"UNZ count":        {strings.Replace(good, "UNZ+2", "UNZ+3", 1), "segment 9 (UNZ): interchange control count \"3\", but the interchange holds 2"},
		"UNZ reference":    {strings.Replace(good, "UNZ+2+IC1", "UNZ+2+IC2", 1), "control reference \"IC2\" differs"},
		"no UNZ":           {strings.TrimSuffix(good, "UNZ+2+IC1'"), "ends without UNZ"},
		"data after UNZ":   {good + "UNH+3'", "data after UNZ"},
		"stray segment":    {strings.Replace(good, "UNH+M2", "FTX+x'UNH+M2", 1), "segment 6 (FTX): segment outside a message"},
		"unterminated":     {strings.TrimSuffix(good, "'"), "without its terminator"},
		"release at end":   {good + "?", ""},
	}
	for name, c := range interchange {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(c.in))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error with %q", err, c.want)
			}
		})
	}
	message := map[string]struct {
		in, want string
	}{
		"UNT count":      {strings.Replace(good, "UNT+4+M1", "UNT+5+M1", 1), "message 1 \"M1\": segment 4 (UNT): segment count \"5\", but the message has 4"},
		"UNT reference":  {strings.Replace(good, "UNT+4+M1", "UNT+4+M9", 1), "segment 4 (UNT): message reference \"M9\" differs from UNH's \"M1\""},
		"no UNT":         {strings.Replace(good, "UNT+4+M1'", "", 1), "segment 4 (UNH): message not closed by UNT"},
		"bad tag":        {strings.Replace(good, "FTX+ACB", "ftx+ACB", 1), "segment 3 (): \"ftx\" is not a segment tag"},
		"duplicate ref":  {strings.Replace(good, "UNH+M2", "UNH+M1", 1), "used twice"},
		"no message ref": {strings.Replace(good, "UNH+M2", "UNH+", 1), "message reference number missing"},
	}
	for name, c := range message {
		t.Run(name, func(t *testing.T) {
			in := strings.Replace(c.in, "UNT+3+M2", "UNT+3+M2", 1)
			ic, err := Parse([]byte(in))
			if err != nil {
				t.Fatal(err)
			}
			var bad, ok int
			for _, m := range ic.Messages {
				if m.Err == nil {
					ok++
					continue
				}
				bad++
				if !strings.Contains(m.Err.Error(), c.want) {
					t.Errorf("got %v, want %q", m.Err, c.want)
				}
				var se *MessageError
				if !errors.As(m.Err, &se) || se.Segment == 0 {
					t.Errorf("refusal names no segment: %v", m.Err)
				}
			}
			if bad == 0 {
				t.Fatal("no message refused")
			}
			if ok == 0 && name != "duplicate ref" && name != "no UNT" {
				t.Error("the good message was refused too")
			}
		})
	}
}

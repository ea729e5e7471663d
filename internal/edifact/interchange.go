package edifact

import (
	"errors"
	"fmt"
	"strconv"
)

// An Interchange is a parsed UNB...UNZ envelope.
type Interchange struct {
	Delimiters Delimiters
	// Sender and Recipient are the identifications of UNB.
	Sender, Recipient string
	// Ref is the interchange control reference of UNB, repeated by UNZ.
	Ref      string
	Messages []*Message
}

// A Message is one UNH...UNT message: its segments, UNH and UNT included,
// or the reason it is refused.
type Message struct {
	// Number is the message's place in the interchange, from 1.
	Number int
	// Ref is the message reference number of UNH, repeated by UNT.
	Ref string
	// Type is the message identifier of UNH: type, version, release,
	// controlling agency and association assigned code, such as
	// MSCONS, D, 04B, UN, 2.4c.
	Type     []string
	Segments []Segment
	// Err, if not nil, refuses the message whole.
	Err *MessageError
}

// A MessageError refuses one message and names the segment at fault by
// its number within the message, counting UNH as 1 as UNT counts.
type MessageError struct {
	Message int    // the message's place in the interchange
	Ref     string // the message reference of UNH, if any
	Segment int
	Tag     string
	Err     error
}

// Error names the message and the segment.
func (e *MessageError) Error() string {
	ref := ""
	if e.Ref != "" {
		ref = " " + strconv.Quote(e.Ref)
	}
	return fmt.Sprintf("message %d%s: segment %d (%s): %v", e.Message, ref, e.Segment, e.Tag, e.Err)
}

// Unwrap returns the cause.
func (e *MessageError) Unwrap() error { return e.Err }

// Fail returns a MessageError for segment seg of m.
func (m *Message) Fail(seg *Segment, format string, args ...any) *MessageError {
	n := seg.Position - m.Segments[0].Position + 1
	return &MessageError{Message: m.Number, Ref: m.Ref, Segment: n, Tag: seg.Tag, Err: fmt.Errorf(format, args...)}
}

// Parse reads an interchange. An error in its envelope (UNA, UNB, UNZ, a
// segment outside every message) or a segment longer than MaxSegmentBytes
// is returned and refuses everything; another error within a message is
// that message's Err.
func Parse(data []byte) (*Interchange, error) {
	s, err := newScanner(data)
	if err != nil {
		return nil, err
	}
	if !s.more() {
		return nil, &SyntaxError{Position: 1, Err: errors.New("no UNB after the service string advice")}
	}
	unb, err := s.next()
	if err != nil {
		return nil, err
	}
	if unb.Tag != "UNB" {
		return nil, &SyntaxError{Position: unb.Position, Tag: unb.Tag, Err: errors.New("the interchange does not start with UNB")}
	}
	ic := &Interchange{Delimiters: s.d, Sender: unb.Element(1, 0), Recipient: unb.Element(2, 0), Ref: unb.Element(4, 0)}
	envelope := func(seg Segment, format string, args ...any) error {
		return &SyntaxError{Position: seg.Position, Tag: seg.Tag, Err: fmt.Errorf(format, args...)}
	}
	switch syntax, version := unb.Element(0, 0), unb.Element(0, 1); {
	case len(syntax) != 4 || syntax[:3] != "UNO" || syntax[3] < 'A' || syntax[3] > 'F':
		return nil, envelope(unb, "syntax identifier %q: want UNOA to UNOF", syntax)
	case version != "3":
		return nil, envelope(unb, "syntax version %q is not supported: want 3", version)
	case ic.Sender == "" || ic.Recipient == "":
		return nil, envelope(unb, "sender or recipient missing")
	case ic.Ref == "":
		return nil, envelope(unb, "interchange control reference missing")
	}
	refs := map[string]bool{}
	var msg *Message
	for s.more() {
		seg, err := s.next()
		if err != nil {
			if msg == nil || errors.Is(err, errSegmentTooLong) {
				return nil, err
			}
			if msg.Err == nil {
				msg.Err = msg.Fail(&seg, "%v", err.(*SyntaxError).Err)
			}
			msg.Segments = append(msg.Segments, seg)
			continue
		}
		switch {
		case seg.Tag == "UNH":
			if msg != nil && msg.Err == nil {
				msg.Err = msg.Fail(&seg, "message not closed by UNT before the next UNH")
			}
			msg = &Message{Number: len(ic.Messages) + 1, Ref: seg.Element(0, 0), Segments: []Segment{seg}}
			if len(seg.Elements) >= 2 {
				msg.Type = seg.Elements[1]
			}
			ic.Messages = append(ic.Messages, msg)
			switch {
			case msg.Ref == "":
				msg.Err = msg.Fail(&seg, "message reference number missing")
			case refs[msg.Ref]:
				msg.Err = msg.Fail(&seg, "message reference %q used twice in the interchange", msg.Ref)
			}
			refs[msg.Ref] = true
		case seg.Tag == "UNZ":
			if msg != nil && msg.Err == nil {
				msg.Err = msg.Fail(&seg, "message not closed by UNT before UNZ")
			}
			if n, err := strconv.Atoi(seg.Element(0, 0)); err != nil || n != len(ic.Messages) {
				return nil, envelope(seg, "interchange control count %q, but the interchange holds %d messages", seg.Element(0, 0), len(ic.Messages))
			}
			if ref := seg.Element(1, 0); ref != ic.Ref {
				return nil, envelope(seg, "interchange control reference %q differs from UNB's %q", ref, ic.Ref)
			}
			if s.more() {
				return nil, &SyntaxError{Position: seg.Position + 1, Err: errors.New("data after UNZ")}
			}
			return ic, nil
		case msg == nil:
			return nil, envelope(seg, "segment outside a message: want UNH or UNZ")
		case seg.Tag == "UNT":
			msg.Segments = append(msg.Segments, seg)
			n := len(msg.Segments)
			if msg.Err == nil {
				if c, err := strconv.Atoi(seg.Element(0, 0)); err != nil || c != n {
					msg.Err = msg.Fail(&seg, "segment count %q, but the message has %d segments", seg.Element(0, 0), n)
				} else if ref := seg.Element(1, 0); ref != msg.Ref {
					msg.Err = msg.Fail(&seg, "message reference %q differs from UNH's %q", ref, msg.Ref)
				}
			}
			msg = nil
		default:
			msg.Segments = append(msg.Segments, seg)
		}
	}
	return nil, &SyntaxError{Position: s.n + 1, Err: errors.New("the interchange ends without UNZ")}
}

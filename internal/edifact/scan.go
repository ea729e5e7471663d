package edifact

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// A scanner cuts an interchange into segments.
type scanner struct {
	data []byte
	pos  int
	d    Delimiters
	n    int // segments read
	buf  []byte
	str  string // data, once, for substrings of it
}

// newScanner reads the service string advice, if any, and returns a
// scanner positioned at the first segment.
func newScanner(data []byte) (*scanner, error) {
	s := &scanner{data: data, str: string(data), d: DefaultDelimiters}
	if !bytes.HasPrefix(data, []byte("UNA")) {
		if !bytes.HasPrefix(data, []byte("UNB")) {
			return nil, ErrNotEDIFACT
		}
		return s, nil
	}
	if len(data) < 9 {
		return nil, &SyntaxError{Tag: "UNA", Err: errors.New("the service string advice is shorter than its six characters")}
	}
	d := Delimiters{Component: data[3], Element: data[4], Decimal: data[5], Release: data[6], Segment: data[8]}
	// Two roles on one character would make the split ambiguous; a
	// letter, digit or line break as a delimiter would split tags and data.
	roles := []byte{d.Component, d.Element, d.Release, d.Segment}
	for i, c := range roles {
		if isAlnum(c) || c == ' ' || (c == '\r' || c == '\n') && i < 3 {
			return nil, &SyntaxError{Tag: "UNA", Err: fmt.Errorf("service character %q cannot be a delimiter", c)}
		}
		if bytes.IndexByte(roles[i+1:], c) >= 0 {
			return nil, &SyntaxError{Tag: "UNA", Err: fmt.Errorf("service character %q is given two roles", c)}
		}
	}
	if d.Decimal != '.' && d.Decimal != ',' {
		return nil, &SyntaxError{Tag: "UNA", Err: fmt.Errorf("decimal mark %q: want . or ,", d.Decimal)}
	}
	s.d = d
	s.pos = 9
	return s, nil
}

// isTag reports whether the first element of a segment is a tag: one
// component of three upper-case letters or digits.
func isTag(e []string) bool {
	return len(e) == 1 && len(e[0]) == 3 && isAlnum(e[0][0]) && isAlnum(e[0][1]) && isAlnum(e[0][2]) &&
		strings.ToUpper(e[0]) == e[0]
}

func isAlnum(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
}

// more skips the line breaks that writers put between segments and
// reports whether a segment follows.
func (s *scanner) more() bool {
	for s.pos < len(s.data) && (s.data[s.pos] == '\r' || s.data[s.pos] == '\n') && s.data[s.pos] != s.d.Segment {
		s.pos++
	}
	return s.pos < len(s.data)
}

// next returns the next segment; call it only after more reports one. A
// segment with an error still has its Position, and its Tag when the tag
// could be read; the scanner is then past its terminator, so scanning
// can go on with the next segment.
func (s *scanner) next() (Segment, error) {
	s.n++
	seg := Segment{Position: s.n, Elements: make([][]string, 0, 4)}
	d := s.d
	elem := make([]string, 0, 2)
	// A component without release characters is a substring of the
	// input, which costs no copy; only one with them is built in buf.
	start, released := s.pos, false
	component := func(end int) string {
		if !released {
			return s.str[start:end]
		}
		c := string(s.buf)
		s.buf, released = s.buf[:0], false
		return c
	}
	ended := false
	i := s.pos
	// The terminator of a segment of MaxSegmentBytes lies at end-1.
	end := min(len(s.data), s.pos+MaxSegmentBytes+1)
	for ; i < end; i++ {
		c := s.data[i]
		switch c {
		case d.Release:
			if !released {
				s.buf = append(s.buf[:0], s.data[start:i]...)
				released = true
			}
			i++
			if i == len(s.data) {
				s.pos = i
				return seg, s.fail(seg, "the input ends after a release character")
			}
			s.buf = append(s.buf, s.data[i])
			continue
		case d.Component:
			elem = append(elem, component(i))
			start = i + 1
			continue
		case d.Element, d.Segment:
			elem = append(elem, component(i))
			start = i + 1
			seg.Elements = append(seg.Elements, elem)
			elem = make([]string, 0, 2)
			if c == d.Segment {
				ended = true
			}
		default:
			if released {
				s.buf = append(s.buf, c)
			}
			continue
		}
		if ended {
			break
		}
	}
	if !ended && i < len(s.data) {
		return seg, s.skipLong(seg, i)
	}
	s.pos = i + 1
	if len(seg.Elements) == 0 {
		return seg, s.fail(seg, "the input ends inside a segment without its terminator")
	}
	tag := seg.Elements[0]
	seg.Elements = seg.Elements[1:]
	if !isTag(tag) {
		return seg, s.fail(seg, fmt.Sprintf("%q is not a segment tag", strings.Join(tag, string(d.Component))))
	}
	seg.Tag = tag[0]
	if !ended {
		return seg, s.fail(seg, "the input ends inside the segment, without its terminator")
	}
	return seg, nil
}

// skipLong refuses seg, longer than MaxSegmentBytes, and moves the
// scanner past its terminator, which it looks for from i on.
func (s *scanner) skipLong(seg Segment, i int) error {
	for ; i < len(s.data) && s.data[i] != s.d.Segment; i++ {
		if s.data[i] == s.d.Release {
			i++
		}
	}
	s.pos = i + 1
	if len(seg.Elements) > 0 && isTag(seg.Elements[0]) {
		seg.Tag = seg.Elements[0][0]
	}
	return &SyntaxError{Position: seg.Position, Tag: seg.Tag, Err: errSegmentTooLong}
}

func (s *scanner) fail(seg Segment, reason string) error {
	return &SyntaxError{Position: seg.Position, Tag: seg.Tag, Err: errors.New(reason)}
}

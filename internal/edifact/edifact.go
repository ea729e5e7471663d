// Package edifact splits UN/EDIFACT interchanges (ISO 9735, syntax
// version 3) into segments, data elements and components, and checks their
// envelopes: UNB/UNZ around the interchange, UNH/UNT around each message,
// with their counts and references.
//
// A message is the unit a receiver accepts or refuses, so a message whose
// own envelope or syntax is broken comes back as a *MessageError beside the
// good ones; a broken interchange envelope refuses the whole interchange.
package edifact

import (
	"errors"
	"fmt"
)

// Delimiters are the service characters of an interchange, as a UNA
// service string advice sets them.
type Delimiters struct {
	Component byte // separates the components of a composite element
	Element   byte // separates the data elements of a segment
	Decimal   byte // the decimal mark of numbers
	Release   byte // makes the next character plain data
	Segment   byte // ends a segment
}

// DefaultDelimiters are those of an interchange without UNA: `:+.? '`.
var DefaultDelimiters = Delimiters{Component: ':', Element: '+', Decimal: '.', Release: '?', Segment: '\''}

// A Segment is one segment: its tag and its data elements, each a list of
// components with release characters removed.
type Segment struct {
	// Position is the segment's place in the interchange, counting from 1
	// at UNB (UNA is not a segment).
	Position int
	Tag      string
	Elements [][]string
}

// Element returns component j of data element i, or "" if absent; i
// counts from 0 after the tag.
func (s *Segment) Element(i, j int) string {
	if i < 0 || i >= len(s.Elements) || j < 0 || j >= len(s.Elements[i]) {
		return ""
	}
	return s.Elements[i][j]
}

// A SyntaxError is a segment that cannot be read.
type SyntaxError struct {
	Position int    // the segment's place in the interchange
	Tag      string // empty if the segment has no readable tag
	Err      error
}

// Error names the segment.
func (e *SyntaxError) Error() string {
	if e.Tag == "" {
		return fmt.Sprintf("segment %d: %v", e.Position, e.Err)
	}
	return fmt.Sprintf("segment %d (%s): %v", e.Position, e.Tag, e.Err)
}

// Unwrap returns the cause.
func (e *SyntaxError) Unwrap() error { return e.Err }

// MaxSegmentBytes bounds a segment, from its tag to its terminator, which
// is not counted. A real one stays far below: the longest segment of the
// directory MSCONS uses, FTX with five texts of 512 characters, has about
// 2.6 KB, twice that if every character were released. A segment past the
// bound refuses the interchange, and ReadAll stops reading at it, so that
// memory holds no more of it than this.
const MaxSegmentBytes = 64 << 10

// errSegmentTooLong is the reason of a segment past MaxSegmentBytes.
var errSegmentTooLong = fmt.Errorf("longer than %d bytes, the most a segment may have", MaxSegmentBytes)

// ErrNotEDIFACT means the input does not start with UNA or UNB.
var ErrNotEDIFACT = errors.New("edifact: the input does not start with UNA or UNB")

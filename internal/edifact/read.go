package edifact

import (
	"bytes"
	"fmt"
	"io"
)

// ReadAll reads an interchange from r to its end for Parse, and refuses
// one with a segment longer than MaxSegmentBytes as soon as it has read
// that much of the segment, with a *SyntaxError naming its position (and
// its tag, if it has one): the interchange is read whole, since its
// envelope counts are checked before any message is used, but not a
// segment that no reader could use. Bounding the whole is the caller's
// (io.LimitReader, http.MaxBytesReader); their errors are returned wrapped.
func ReadAll(r io.Reader) ([]byte, error) {
	var (
		data  = make([]byte, 0, 512)
		sc    segmentCounter
		start = -1 // where segments begin, once the head has been read
	)
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := r.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if start < 0 && (len(data) >= len("UNA:+.? '") || err != nil) {
			start = sc.begin(data)
		}
		if start >= 0 {
			if serr := sc.count(data[start:]); serr != nil {
				return nil, serr
			}
			start = len(data)
		}
		switch {
		case err == io.EOF:
			return data, nil
		case err != nil:
			return nil, fmt.Errorf("edifact: read the interchange: %w", err)
		}
	}
}

// A segmentCounter follows the segments of an interchange as its bytes
// arrive, as the scanner will split them: it counts their bytes and their
// positions.
type segmentCounter struct {
	d        Delimiters
	position int     // of the segment being read, from 1 at UNB
	length   int     // its bytes so far
	released bool    // the last byte was a release character
	head     [4]byte // its first bytes: a tag and an element separator?
}

// begin takes the delimiters from the head of an interchange and returns
// where its first segment begins. A head Parse will refuse is followed
// with the default delimiters: the bound is then only approximate, and
// Parse says what is wrong.
func (c *segmentCounter) begin(head []byte) int {
	c.d, c.position = DefaultDelimiters, 1
	s, err := newScanner(head)
	if err != nil {
		return 0
	}
	c.d = s.d
	return s.pos
}

// count follows the bytes b, the next ones of the interchange, and
// returns a *SyntaxError for a segment past MaxSegmentBytes. It looks
// for terminators and release characters with bytes.IndexByte, so that
// following costs little beside the parse.
func (c *segmentCounter) count(b []byte) error {
	for len(b) > 0 {
		if c.released { // the byte after a release character is data
			c.released = false
			if err := c.add(b[:1]); err != nil {
				return err
			}
			b = b[1:]
			continue
		}
		if c.length == 0 { // line breaks between segments, as the scanner skips them
			for len(b) > 0 && (b[0] == '\r' || b[0] == '\n') && b[0] != c.d.Segment {
				b = b[1:]
			}
		}
		data := b
		end := bytes.IndexByte(b, c.d.Segment)
		if end >= 0 {
			data = b[:end]
		}
		if r := bytes.IndexByte(data, c.d.Release); r >= 0 {
			data, end, c.released = data[:r+1], -1, true
		}
		if err := c.add(data); err != nil {
			return err
		}
		b = b[len(data):]
		if end >= 0 {
			b = b[1:]
			c.position++
			c.length = 0
		}
	}
	return nil
}

// add counts data as bytes of the segment being read.
func (c *segmentCounter) add(data []byte) error {
	if c.length < len(c.head) {
		copy(c.head[c.length:], data)
	}
	c.length += len(data)
	if c.length <= MaxSegmentBytes {
		return nil
	}
	tag := string(c.head[:3])
	if c.head[3] != c.d.Element || !isTag([]string{tag}) {
		tag = ""
	}
	return &SyntaxError{Position: c.position, Tag: tag, Err: errSegmentTooLong}
}

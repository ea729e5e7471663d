package edifact

import (
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
// returns a *SyntaxError for a segment past MaxSegmentBytes.
func (c *segmentCounter) count(b []byte) error {
	for _, x := range b {
		switch {
		case c.released:
			c.released = false
		case x == c.d.Segment:
			c.position++
			c.length = 0
			continue
		case c.length == 0 && (x == '\r' || x == '\n'):
			continue // between segments, as the scanner skips them
		case x == c.d.Release:
			c.released = true
		}
		if c.length < len(c.head) {
			c.head[c.length] = x
		}
		c.length++
		if c.length > MaxSegmentBytes {
			tag := string(c.head[:3])
			if c.head[3] != c.d.Element || !isTag([]string{tag}) {
				tag = ""
			}
			return &SyntaxError{Position: c.position, Tag: tag, Err: errSegmentTooLong}
		}
	}
	return nil
}

package edifact

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// withBGM returns good with the BGM of its second message (segment 7) of
// exactly n bytes, terminator not counted, its document made of fill
// repeated and padded with x; a line break after every segment if lines.
func withBGM(t *testing.T, n int, fill string, lines bool) string {
	t.Helper()
	const frame = len("BGM+7+") + len("+9")
	doc := strings.Repeat(fill, (n-frame)/len(fill))
	doc += strings.Repeat("x", n-frame-len(doc))
	in := strings.Replace(good, "BGM+7+DOC2+9'", "BGM+7+"+doc+"+9'", 1)
	if lines {
		in = strings.ReplaceAll(strings.ReplaceAll(in, "'", "'\r\n"), "?'\r\n", "?'")
	}
	return in
}

// TestSegmentBound: a segment of MaxSegmentBytes, released characters
// counted, is read; one byte more refuses the interchange, naming the
// segment, in Parse and in ReadAll alike.
func TestSegmentBound(t *testing.T) {
	for _, c := range []struct {
		name  string
		fill  string
		lines bool
	}{{"plain", "x", false}, {"released", "?+", false}, {"line breaks", "x", true}} {
		at := withBGM(t, MaxSegmentBytes, c.fill, c.lines)
		ic, err := Parse([]byte(at))
		if err != nil || ic.Messages[1].Err != nil || len(ic.Messages[1].Segments[1].Element(1, 0)) < (MaxSegmentBytes-8)/2 {
			t.Fatalf("%s: a segment of MaxSegmentBytes: %v", c.name, err)
		}
		if data, err := ReadAll(strings.NewReader(at)); err != nil || string(data) != at {
			t.Errorf("%s: ReadAll of a segment of MaxSegmentBytes: %d bytes, %v", c.name, len(data), err)
		}
		over := withBGM(t, MaxSegmentBytes+1, c.fill, c.lines)
		const want = "segment 7 (BGM): longer than 65536 bytes, the most a segment may have"
		_, err = Parse([]byte(over))
		var se *SyntaxError
		if !errors.As(err, &se) || se.Position != 7 || se.Tag != "BGM" || err.Error() != want {
			t.Errorf("%s: Parse of a segment past MaxSegmentBytes: %v; want %q", c.name, err, want)
		}
		data, err := ReadAll(strings.NewReader(over))
		if !errors.As(err, &se) || data != nil || err.Error() != want {
			t.Errorf("%s: ReadAll of a segment past MaxSegmentBytes: %d bytes, %v; want %q", c.name, len(data), err, want)
		}
	}
	// A long first element is no tag to name.
	_, err := ReadAll(strings.NewReader("UNB" + strings.Repeat("B", MaxSegmentBytes)))
	if err == nil || err.Error() != "segment 1: longer than 65536 bytes, the most a segment may have" {
		t.Errorf("a long UNB without delimiters: %v", err)
	}
}

// counting counts the bytes read from r.
type counting struct {
	r io.Reader
	n int
}

func (c *counting) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestReadAllStopsAtALongSegment: ReadAll stops reading within a few times
// MaxSegmentBytes of the start of a segment that never ends; a reader
// without the bound would read the whole 64 MiB.
func TestReadAllStopsAtALongSegment(t *testing.T) {
	head := strings.SplitAfter(good, "BGM+7+")[0]
	r := &counting{r: io.MultiReader(strings.NewReader(head), bytes.NewReader(bytes.Repeat([]byte("x"), 64<<20)))}
	data, err := ReadAll(r)
	var se *SyntaxError
	if !errors.As(err, &se) || se.Position != 3 || se.Tag != "BGM" || data != nil {
		t.Fatalf("%d bytes, %v", len(data), err)
	}
	if r.n > 4*MaxSegmentBytes {
		t.Errorf("%d bytes read; want no more than %d", r.n, 4*MaxSegmentBytes)
	}
}

// TestReadAllPassesErrors: a reader's error is returned wrapped.
func TestReadAllPassesErrors(t *testing.T) {
	boom := errors.New("boom")
	if _, err := ReadAll(io.MultiReader(strings.NewReader(good[:20]), iotest.ErrReader(boom))); !errors.Is(err, boom) {
		t.Errorf("%v; want it to wrap %v", err, boom)
	}
}

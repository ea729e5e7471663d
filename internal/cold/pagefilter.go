package cold

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/parquet"
)

// A typed read selects its rows on the encoded values of malo_id and
// obis_code, not on decoded strings: a dictionary-encoded page is matched
// by comparing its indices with the wanted value's index in the chunk's
// dictionary, run by run (a market location's rows, sorted together, are
// one run of one index), and a plain-encoded page by comparing bytes in
// place. A page whose bounds say it holds one value is decided by them
// and not read at all.

// errUnfiltered says a column or page is of a type or encoding the typed
// read does not decode itself (match, readEncoded): it then decodes it
// with arrow-go's column reader (groupRead.matching, columnCursor).
var errUnfiltered = errors.New("a column or page encoding the typed read does not decode itself")

// match returns the rows of ranges, sorted and disjoint, whose value of
// the byte array column col is want.
func (g groupRead) match(col int, ranges []rowRange, want string) ([]rowRange, error) {
	cp := g.idx.cols[col]
	var out, read []rowRange
	j := 0
	for _, p := range cp.pages {
		for j < len(ranges) && ranges[j].to <= p.first {
			j++
		}
		for k := j; k < len(ranges) && ranges[k].from < p.end; k++ {
			r := rowRange{max(ranges[k].from, p.first), min(ranges[k].to, p.end)}
			switch {
			case p.same == allSame && string(p.value) == want:
				out = append(out, r)
			case p.same == mixed:
				read = appendRange(read, r)
			}
		}
	}
	if len(read) == 0 {
		return out, nil
	}
	var found []rowRange
	err := errUnfiltered
	if descr := g.schema.Column(col); descr.MaxDefinitionLevel() == 0 && descr.MaxRepetitionLevel() == 0 {
		found, err = g.matchEncoded(col, read, []byte(want))
	}
	if errors.Is(err, errUnfiltered) {
		found, err = g.matching(col, read, want)
	}
	if err != nil {
		return nil, err
	}
	return mergeRanges(append(out, found...)), nil
}

// matchEncoded returns the rows of ranges, sorted and disjoint, whose
// value of column col, required and flat, is want, reading the encoded
// values of the pages that hold them; errUnfiltered if a page is encoded
// otherwise than PLAIN or by dictionary.
func (g groupRead) matchEncoded(col int, ranges []rowRange, want []byte) ([]rowRange, error) {
	c := runCollector{want: ranges}
	index, dict := int64(-1), false
	err := g.eachPage(col, ranges, func(vals []byte, n int64) error {
		var err error
		dict = true
		index, err = dictIndex(vals, n, want)
		return err
	}, func(p pageLoc, vals []byte, enc parquet.Encoding) error {
		c.base = p.first
		n := p.end - p.first
		switch enc {
		case parquet.Encodings.Plain:
			return matchPlain(vals, n, want, c.add)
		case parquet.Encodings.RLEDict, parquet.Encodings.PlainDict:
			if !dict {
				return errors.New("a dictionary-encoded page without a dictionary")
			}
			if index < 0 { // no row of the page holds want
				return nil
			}
			return matchIndices(vals, n, index, c.add)
		}
		return errUnfiltered
	})
	if err != nil {
		return nil, err
	}
	return c.out, nil
}

// A runCollector gathers rows, given in ascending order relative to base,
// that lie within want, sorted and disjoint, as runs.
type runCollector struct {
	want []rowRange
	j    int
	base int64
	out  []rowRange
}

// add adds rows [from, to) of the current page.
func (c *runCollector) add(from, to int64) {
	from, to = from+c.base, to+c.base
	for c.j < len(c.want) && c.want[c.j].to <= from {
		c.j++
	}
	for i := c.j; i < len(c.want) && c.want[i].from < to; i++ {
		if lo, hi := max(from, c.want[i].from), min(to, c.want[i].to); lo < hi {
			c.out = appendRange(c.out, rowRange{lo, hi})
		}
	}
}

// dictIndex returns the index of want among the n plain-encoded byte
// arrays of a dictionary page, -1 if it is not one of them.
func dictIndex(b []byte, n int64, want []byte) (int64, error) {
	for i := range n {
		v, rest, err := nextPlain(b)
		if err != nil {
			return 0, fmt.Errorf("value %d: %w", i, err)
		}
		if bytes.Equal(v, want) {
			return i, nil
		}
		b = rest
	}
	return -1, nil
}

// nextPlain splits a plain-encoded byte array off b.
func nextPlain(b []byte) (v, rest []byte, err error) {
	if len(b) < 4 {
		return nil, nil, fmt.Errorf("%d bytes left, want a length", len(b))
	}
	l := uint64(binary.LittleEndian.Uint32(b))
	if l > uint64(len(b)-4) {
		return nil, nil, fmt.Errorf("a value of %d bytes, %d left", l, len(b)-4)
	}
	return b[4 : 4+l], b[4+l:], nil
}

// matchPlain calls add with every run of the n plain-encoded byte arrays
// of b that equal want.
func matchPlain(b []byte, n int64, want []byte, add func(from, to int64)) error {
	for i := range n {
		v, rest, err := nextPlain(b)
		if err != nil {
			return fmt.Errorf("value %d: %w", i, err)
		}
		if bytes.Equal(v, want) {
			add(i, i+1)
		}
		b = rest
	}
	return nil
}

// matchIndices calls add with every run of the n dictionary indices of b
// (see eachRun) that equal want: an RLE run is decided at once, a
// bit-packed one index by index.
func matchIndices(b []byte, n, want int64, add func(from, to int64)) error {
	return eachRun(b, n, func(r indexRun) {
		if r.packed == nil {
			if r.v == uint64(want) {
				add(r.i, r.i+r.n)
			}
			return
		}
		for k := range r.n {
			if r.at(k) == uint64(want) {
				add(r.i+k, r.i+k+1)
			}
		}
	})
}

// mergeRanges returns rs sorted and disjoint.
func mergeRanges(rs []rowRange) []rowRange {
	slices.SortFunc(rs, func(a, b rowRange) int { return int(min(max(a.from-b.from, -1), 1)) })
	var out []rowRange
	for _, r := range rs {
		out = appendRange(out, r)
	}
	return out
}

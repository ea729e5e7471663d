package cold

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// A typed read selects its rows on the encoded values of malo_id and
// obis_code, not on decoded strings: a dictionary-encoded page is matched
// by comparing its indices with the wanted value's index in the chunk's
// dictionary, run by run (a market location's rows, sorted together, are
// one run of one index), and a plain-encoded page by comparing bytes in
// place. A page whose bounds say it holds one value is decided by them
// and not read at all.

// errUnfiltered says a page is encoded in a way match does not read; the
// rows are then matched on decoded values (groupRead.matching).
var errUnfiltered = errors.New("a page encoding the filter does not read")

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
	cc, err := g.meta.ColumnChunk(col)
	if err != nil {
		return nil, err
	}
	if cc.CryptoMetadata() != nil {
		return nil, fmt.Errorf("column %s is encrypted", g.schema.Column(col).Name())
	}
	pr, s, err := g.pages.reader(g.r, cc.Compression(), g.idx.cols[col], ranges)
	if err != nil || pr == nil {
		return nil, err
	}
	defer g.pages.put(pr)
	name := g.schema.Column(col).Name()
	c := runCollector{want: ranges}
	index, dict := int64(-1), false
	k := 0
	for pr.Next() {
		var (
			vals    []byte
			n, rows int64
		)
		switch pg := pr.Page().(type) {
		case *file.DictionaryPage:
			if index, err = dictIndex(pg.Data(), int64(pg.NumValues()), want); err != nil {
				return nil, fmt.Errorf("column %s: dictionary page: %w", name, err)
			}
			dict = true
			continue
		case *file.DataPageV1:
			vals, n, rows = pg.Data(), int64(pg.NumValues()), int64(pg.NumValues())
		case *file.DataPageV2:
			lv := int64(pg.DefinitionLevelByteLen()) + int64(pg.RepetitionLevelByteLen())
			if lv > int64(len(pg.Data())) {
				return nil, fmt.Errorf("column %s: levels of %d bytes in a page of %d", name, lv, len(pg.Data()))
			}
			vals, n, rows = pg.Data()[lv:], int64(pg.NumValues()), int64(pg.NumRows())
		default:
			return nil, fmt.Errorf("column %s: a page of type %T", name, pg)
		}
		if k == len(s.sel) {
			return nil, fmt.Errorf("column %s: more pages than the offset index placed", name)
		}
		p := s.sel[k]
		k++
		if n != rows || rows != p.end-p.first {
			return nil, fmt.Errorf("column %s: a page of %d values in %d rows, the offset index says %d rows", name, n, rows, p.end-p.first)
		}
		c.base = p.first
		switch parquet.Encoding(pr.Page().Encoding()) {
		case parquet.Encodings.Plain:
			err = matchPlain(vals, n, want, c.add)
		case parquet.Encodings.RLEDict, parquet.Encodings.PlainDict:
			if !dict {
				return nil, fmt.Errorf("column %s: a dictionary-encoded page without a dictionary", name)
			}
			if index >= 0 { // else no row of the page holds want
				err = matchIndices(vals, n, index, c.add)
			}
		default:
			return nil, errUnfiltered
		}
		if err != nil {
			return nil, fmt.Errorf("column %s: page of rows %d to %d: %w", name, p.first, p.end, err)
		}
	}
	if err := pr.Err(); err != nil {
		return nil, fmt.Errorf("column %s: %w", name, err)
	}
	if k != len(s.sel) {
		return nil, fmt.Errorf("column %s: %d pages read, the offset index placed %d", name, k, len(s.sel))
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
// (a bit width, then runs of the RLE/bit-packing hybrid) that equal want.
// An RLE run is decided at once; a bit-packed one index by index.
func matchIndices(b []byte, n, want int64, add func(from, to int64)) error {
	if len(b) == 0 {
		return errors.New("no bit width")
	}
	bw := int(b[0])
	if bw > 32 {
		return fmt.Errorf("indices of %d bits", bw)
	}
	b = b[1:]
	for i := int64(0); i < n; {
		h, m := binary.Uvarint(b)
		if m <= 0 {
			return fmt.Errorf("index %d: a run header that does not parse", i)
		}
		b = b[m:]
		if h>>1 == 0 {
			return fmt.Errorf("index %d: an empty run", i)
		}
		if h&1 == 0 { // an RLE run: one index, repeated
			nb := (bw + 7) / 8
			if len(b) < nb {
				return fmt.Errorf("index %d: a run's value of %d bytes, %d left", i, nb, len(b))
			}
			var v uint64
			for k := range nb {
				v |= uint64(b[k]) << (8 * k)
			}
			b = b[nb:]
			cnt := int64(min(h>>1, uint64(n-i)))
			if int64(v) == want {
				add(i, i+cnt)
			}
			i += cnt
			continue
		}
		// Bit-packed: groups of eight indices, bw bytes a group; the last
		// run of a page may end early.
		groups := int64(min(h>>1, uint64(n)))
		cnt := min(groups*8, n-i)
		if need := (cnt*int64(bw) + 7) / 8; need > int64(len(b)) {
			return fmt.Errorf("index %d: %d bit-packed indices in %d bytes", i, cnt, len(b))
		}
		for k := range cnt {
			if bitsAt(b, k, bw) == uint64(want) {
				add(i+k, i+k+1)
			}
		}
		b = b[min(int64(len(b)), groups*int64(bw)):]
		i += cnt
	}
	return nil
}

// bitsAt returns the k-th value of bw bits packed least significant bit
// first in b, which holds it.
func bitsAt(b []byte, k int64, bw int) uint64 {
	bit := k * int64(bw)
	off, sh := bit>>3, uint(bit&7)
	var x uint64
	if off+8 <= int64(len(b)) {
		x = binary.LittleEndian.Uint64(b[off:])
	} else {
		for i := off; i < int64(len(b)); i++ {
			x |= uint64(b[i]) << (8 * uint(i-off))
		}
	}
	return (x >> sh) & (1<<uint(bw) - 1)
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

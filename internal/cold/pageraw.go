package cold

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// The typed read decodes some pages itself, on their encoded bytes (see
// match and readFixed): a required, flat column's pages hold their values
// alone, plain or as dictionary indices, and the rows wanted of a page
// can be found there without decoding the rest.

// eachPage calls dict with the dictionary page of column col, if it has
// one, and data with each data page that holds a row of ranges, in order,
// with the bytes of its values and their encoding; col must be required
// and flat.
func (g groupRead) eachPage(col int, ranges []rowRange, dict func(vals []byte, n int64) error,
	data func(p pageLoc, vals []byte, enc parquet.Encoding) error) error {
	name := g.schema.Column(col).Name()
	cc, err := g.meta.ColumnChunk(col)
	if err != nil {
		return err
	}
	if cc.CryptoMetadata() != nil {
		return fmt.Errorf("column %s is encrypted", name)
	}
	pr, s, err := g.pages.reader(g.r, cc.Compression(), g.idx.cols[col], ranges)
	if err != nil || pr == nil {
		return err
	}
	defer g.pages.put(pr)
	k := 0
	for pr.Next() {
		var (
			vals    []byte
			n, rows int64
		)
		switch pg := pr.Page().(type) {
		case *file.DictionaryPage:
			if err := dict(pg.Data(), int64(pg.NumValues())); err != nil {
				return fmt.Errorf("column %s: dictionary page: %w", name, err)
			}
			continue
		case *file.DataPageV1:
			vals, n, rows = pg.Data(), int64(pg.NumValues()), int64(pg.NumValues())
		case *file.DataPageV2:
			lv := int64(pg.DefinitionLevelByteLen()) + int64(pg.RepetitionLevelByteLen())
			if lv > int64(len(pg.Data())) {
				return fmt.Errorf("column %s: levels of %d bytes in a page of %d", name, lv, len(pg.Data()))
			}
			vals, n, rows = pg.Data()[lv:], int64(pg.NumValues()), int64(pg.NumRows())
		default:
			return fmt.Errorf("column %s: a page of type %T", name, pg)
		}
		if k == len(s.sel) {
			return fmt.Errorf("column %s: more pages than the offset index placed", name)
		}
		p := s.sel[k]
		k++
		if n != rows || rows != p.end-p.first {
			return fmt.Errorf("column %s: a page of %d values in %d rows, the offset index says %d rows", name, n, rows, p.end-p.first)
		}
		if err := data(p, vals, parquet.Encoding(pr.Page().Encoding())); err != nil {
			if errors.Is(err, errUnfiltered) {
				return err
			}
			return fmt.Errorf("column %s: page of rows %d to %d: %w", name, p.first, p.end, err)
		}
	}
	if err := pr.Err(); err != nil {
		return fmt.Errorf("column %s: %w", name, err)
	}
	if k != len(s.sel) {
		return fmt.Errorf("column %s: %d pages read, the offset index placed %d", name, k, len(s.sel))
	}
	return nil
}

// An indexRun is a run of n dictionary indices from the i-th of a page:
// one index repeated (packed nil), or bit-packed, bw bits each.
type indexRun struct {
	i, n   int64
	v      uint64
	packed []byte
	bw     int
}

// at returns the k-th index of the run.
func (r indexRun) at(k int64) uint64 {
	if r.packed == nil {
		return r.v
	}
	return bitsAt(r.packed, k, r.bw)
}

// eachRun calls fn with each run of the n dictionary indices of b: a bit
// width, then runs of the RLE/bit-packing hybrid.
func eachRun(b []byte, n int64, fn func(r indexRun)) error {
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
			fn(indexRun{i: i, n: cnt, v: v})
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
		fn(indexRun{i: i, n: cnt, packed: b, bw: bw})
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

package cold

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sort"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// A typed read decodes no page it does not need. arrow-go's column chunk
// reader reads a chunk's pages in order from a stream; a pageStream gives
// it one made of the chunk's dictionary page and the data pages that hold
// the rows asked for, read from the file in as few reads as they allow,
// so that the pages between are neither read nor decompressed. (pqarrow's
// own seek builds a new reader of the row group, and reads its offset
// index again, for every run of rows.)

// A pageStream is the pages of one column chunk a read selected: the
// dictionary page and data pages sel, as one stream.
type pageStream struct {
	sel  []pageLoc
	segs []segment
	size int64
}

// A segment is n bytes of the stream at at, found at off in the file.
type segment struct{ at, off, n int64 }

// selectPages returns the stream of the pages of cp that hold a row of
// runs, sorted and disjoint.
func selectPages(cp chunkPages, runs []rowRange) pageStream {
	var s pageStream
	add := func(off, n int64) {
		if n <= 0 {
			return
		}
		if k := len(s.segs); k > 0 && s.segs[k-1].off+s.segs[k-1].n == off {
			s.segs[k-1].n += n
		} else {
			s.segs = append(s.segs, segment{at: s.size, off: off, n: n})
		}
		s.size += n
	}
	add(cp.dictOff, cp.dictLen)
	j := 0
	for _, p := range cp.pages {
		for j < len(runs) && runs[j].to <= p.first {
			j++
		}
		if j == len(runs) {
			break
		}
		if runs[j].from < p.end {
			s.sel = append(s.sel, p)
			add(p.off, p.size)
		}
	}
	return s
}

// rows returns the rows the selected data pages hold.
func (s *pageStream) rows() int64 {
	var n int64
	for _, p := range s.sel {
		n += p.end - p.first
	}
	return n
}

// at returns where row, of the row group, comes in the rows the stream's
// pages yield; false if none of them holds it.
func (s *pageStream) at(row int64) (int64, bool) {
	i := sort.Search(len(s.sel), func(i int) bool { return s.sel[i].end > row })
	if i == len(s.sel) || s.sel[i].first > row {
		return 0, false
	}
	var n int64
	for _, p := range s.sel[:i] {
		n += p.end - p.first
	}
	return n + row - s.sel[i].first, true
}

// A streamReader reads a pageStream's bytes from the file r.
type streamReader struct {
	r io.ReaderAt
	s *pageStream
}

// ReadAt reads the stream's bytes at off into p.
func (sr streamReader) ReadAt(p []byte, off int64) (int, error) {
	done := 0
	for _, g := range sr.s.segs {
		if len(p) == done {
			break
		}
		if off+int64(done) >= g.at+g.n || off+int64(done) < g.at {
			continue
		}
		skip := off + int64(done) - g.at
		n := min(int64(len(p)-done), g.n-skip)
		m, err := sr.r.ReadAt(p[done:done+int(n)], g.off+skip)
		done += m
		if err != nil && !(err == io.EOF && int64(m) == n) {
			return done, err
		}
	}
	if done < len(p) {
		return done, io.EOF
	}
	return done, nil
}

// A columnCursor reads values of one column chunk at rows of its row
// group, in ascending order, from the selected pages.
type columnCursor struct {
	cr     file.ColumnChunkReader
	pr     file.PageReader
	pool   *pagePool
	stream pageStream
	pos    int64 // the next row the reader yields, in the stream's rows
	descr  *schema.Column
	defs   []int16
}

// A pagePool keeps page readers between reads: each holds buffers of a
// page's size, for its compressed and decompressed bytes, that a read of
// a few pages would otherwise allocate afresh for every column.
type pagePool struct {
	props *parquet.ReaderProperties
	pool  sync.Pool // of file.PageReader
}

func newPagePool(props *parquet.ReaderProperties) *pagePool {
	return &pagePool{props: props}
}

// open returns a cursor over the pages of column chunk cp, of column
// descr compressed with codec, in the file r, that hold rows of runs.
func (pp *pagePool) open(r io.ReaderAt, descr *schema.Column, codec compress.Compression, cp chunkPages, runs []rowRange) (*columnCursor, error) {
	pr, s, err := pp.reader(r, codec, cp, runs)
	if err != nil || pr == nil {
		return &columnCursor{stream: s, descr: descr}, err
	}
	return &columnCursor{cr: file.NewColumnReader(descr, pr, pp.props.Allocator(), nil), pr: pr, pool: pp, stream: s, descr: descr}, nil
}

// reader returns a page reader of the pages of column chunk cp,
// compressed with codec, in the file r, that hold rows of runs, and those
// pages; no reader if none does. put gives the reader back.
func (pp *pagePool) reader(r io.ReaderAt, codec compress.Compression, cp chunkPages, runs []rowRange) (file.PageReader, pageStream, error) {
	s := selectPages(cp, runs)
	if len(s.sel) == 0 {
		return nil, s, nil
	}
	in, err := pp.props.GetStream(streamReader{r: r, s: &s}, 0, s.size)
	if err != nil {
		return nil, s, err
	}
	pr, _ := pp.pool.Get().(file.PageReader)
	if pr == nil {
		if pr, err = file.NewPageReader(in, s.rows(), codec, pp.props.Allocator(), nil); err != nil {
			return nil, s, err
		}
	} else {
		pr.Reset(in, s.rows(), codec, nil)
		if err := pr.Err(); err != nil {
			return nil, s, err
		}
	}
	return pr, s, nil
}

// put gives pr, from reader, back to the pool.
func (pp *pagePool) put(pr file.PageReader) { pp.pool.Put(pr) }

// close gives the cursor's page reader back to its pool. The column
// reader is not closed: that would free the page reader's buffers.
func (c *columnCursor) close() {
	if c.pr != nil {
		c.pool.put(c.pr)
		c.pr, c.cr = nil, nil
	}
}

// seek makes row, of the row group, the next row read.
func (c *columnCursor) seek(row int64) error {
	at, ok := c.stream.at(row)
	if !ok || at < c.pos {
		return fmt.Errorf("column %s: row %d is not in the pages read, or behind the reader", c.descr.Name(), row)
	}
	if at == c.pos {
		return nil
	}
	sk, ok := c.cr.(interface{ Skip(int64) (int64, error) })
	if !ok {
		return fmt.Errorf("column %s: %T cannot skip", c.descr.Name(), c.cr)
	}
	if _, err := sk.Skip(at - c.pos); err != nil {
		return fmt.Errorf("column %s: skip to row %d: %w", c.descr.Name(), row, err)
	}
	c.pos = at
	return nil
}

// A valueKind is how a column's values are kept once read.
type valueKind uint8

const (
	kindString  valueKind = iota // a byte array, as a string
	kindInt                      // an INT32 or INT64, as an int64
	kindDecimal                  // a decimal of any physical type
	kindBool
)

// columnValues are the values of one column at the rows of a read, in
// the runs' order. valid is nil where every value is present.
type columnValues struct {
	kind  valueKind
	valid []bool
	strs  []string
	ints  []int64
	decs  []decimal128.Num
	bools []bool
}

// valueKindOf returns how the values of column descr are kept.
func valueKindOf(descr *schema.Column) valueKind {
	if _, ok := descr.LogicalType().(schema.DecimalLogicalType); ok || descr.ConvertedType() == schema.ConvertedTypes.Decimal {
		return kindDecimal
	}
	switch descr.PhysicalType() {
	case parquet.Types.Boolean:
		return kindBool
	case parquet.Types.Int32, parquet.Types.Int64:
		return kindInt
	}
	return kindString
}

// readRuns returns the values of the column at runs, sorted and
// disjoint, each within the pages the cursor was opened for. Strings
// are interned in strs, which a read shares between its runs: a column
// that repeats few values allocates each once.
func (c *columnCursor) readRuns(runs []rowRange, strs map[string]string) (*columnValues, error) {
	var total int64
	for _, r := range runs {
		total += r.to - r.from
	}
	out := &columnValues{kind: valueKindOf(c.descr)}
	optional := c.descr.MaxDefinitionLevel() > 0
	if optional {
		out.valid = make([]bool, 0, total)
	}
	switch out.kind {
	case kindString:
		out.strs = make([]string, 0, total)
	case kindInt:
		out.ints = make([]int64, 0, total)
	case kindDecimal:
		out.decs = make([]decimal128.Num, 0, total)
	case kindBool:
		out.bools = make([]bool, 0, total)
	}
	for _, r := range runs {
		if err := c.seek(r.from); err != nil {
			return nil, err
		}
		if err := c.read(r.to-r.from, out, strs); err != nil {
			return nil, fmt.Errorf("column %s: rows %d to %d: %w", c.descr.Name(), r.from, r.to, err)
		}
	}
	return out, nil
}

// read appends the next n rows' values to out.
func (c *columnCursor) read(n int64, out *columnValues, strs map[string]string) error {
	maxDef := c.descr.MaxDefinitionLevel()
	var defs []int16
	if maxDef > 0 {
		if int64(cap(c.defs)) < n {
			c.defs = make([]int16, n)
		}
		defs = c.defs[:n]
	}
	var (
		levels int64
		vals   int
		err    error
	)
	switch cr := c.cr.(type) {
	case *file.ByteArrayColumnChunkReader:
		// Within a page: the values point into it, which the next page
		// overwrites, so each batch is copied out before the next.
		buf := make([]parquet.ByteArray, n)
		dec := valueKindOf(c.descr) == kindDecimal
		levels, vals, err = readAll(n, func(k int64, at int64, vat int) (int64, int, error) {
			l, v, err := cr.ReadBatchInPage(k, buf, sub(defs, at), nil)
			for _, b := range buf[:v] {
				if dec {
					d, e := decimalOf(b)
					if e != nil {
						return l, v, e
					}
					out.decs = append(out.decs, d)
					continue
				}
				s, ok := strs[string(b)]
				if !ok {
					s = string(b)
					strs[s] = s
				}
				out.strs = append(out.strs, s)
			}
			return l, v, err
		})
	case *file.FixedLenByteArrayColumnChunkReader:
		if valueKindOf(c.descr) != kindDecimal {
			return fmt.Errorf("a fixed length byte array that is not a decimal")
		}
		buf := make([]parquet.FixedLenByteArray, n)
		levels, vals, err = readAll(n, func(k int64, at int64, vat int) (int64, int, error) {
			l, v, err := cr.ReadBatchInPage(k, buf, sub(defs, at), nil)
			for _, b := range buf[:v] {
				d, e := decimalOf(b)
				if e != nil {
					return l, v, e
				}
				out.decs = append(out.decs, d)
			}
			return l, v, err
		})
	case *file.Int64ColumnChunkReader:
		buf := make([]int64, n)
		levels, vals, err = readAll(n, func(k int64, at int64, vat int) (int64, int, error) {
			return cr.ReadBatch(k, buf[vat:], sub(defs, at), nil)
		})
		if out.kind == kindDecimal {
			for _, v := range buf[:vals] {
				out.decs = append(out.decs, decimal128.FromI64(v))
			}
		} else {
			out.ints = append(out.ints, buf[:vals]...)
		}
	case *file.Int32ColumnChunkReader:
		buf := make([]int32, n)
		levels, vals, err = readAll(n, func(k int64, at int64, vat int) (int64, int, error) {
			return cr.ReadBatch(k, buf[vat:], sub(defs, at), nil)
		})
		for _, v := range buf[:vals] {
			if out.kind == kindDecimal {
				out.decs = append(out.decs, decimal128.FromI64(int64(v)))
			} else {
				out.ints = append(out.ints, int64(v))
			}
		}
	case *file.BooleanColumnChunkReader:
		buf := make([]bool, n)
		levels, vals, err = readAll(n, func(k int64, at int64, vat int) (int64, int, error) {
			return cr.ReadBatch(k, buf[vat:], sub(defs, at), nil)
		})
		out.bools = append(out.bools, buf[:vals]...)
	case nil:
		return fmt.Errorf("no page holds the rows")
	default:
		return fmt.Errorf("physical type %s: not read", c.descr.PhysicalType())
	}
	if err != nil {
		return err
	}
	if levels != n {
		return fmt.Errorf("%d rows read, want %d", levels, n)
	}
	c.pos += n
	if maxDef == 0 {
		if int64(vals) != n {
			return fmt.Errorf("%d values of a required column in %d rows", vals, n)
		}
		return nil
	}
	present := 0
	for _, d := range defs {
		ok := d == maxDef
		out.valid = append(out.valid, ok)
		if ok {
			present++
		}
	}
	if present != vals {
		return fmt.Errorf("%d values for %d present rows", vals, present)
	}
	// Values come packed; spread them so that the i-th row's is at i.
	out.spread(int(n), present)
	return nil
}

// readAll calls batch until n levels are read or it reads none, with the
// levels and values read so far, and returns their totals.
func readAll(n int64, batch func(k, at int64, vat int) (int64, int, error)) (int64, int, error) {
	var (
		levels int64
		vals   int
	)
	for levels < n {
		l, v, err := batch(n-levels, levels, vals)
		levels, vals = levels+l, vals+v
		if err != nil {
			return levels, vals, err
		}
		if l == 0 {
			break
		}
	}
	return levels, vals, nil
}

// sub returns defs from at on, nil for nil.
func sub(defs []int16, at int64) []int16 {
	if defs == nil {
		return nil
	}
	return defs[at:]
}

// spread moves the present values of the last n rows, packed at the end
// of the values, to their rows; a null row gets the zero value.
func (v *columnValues) spread(n, present int) {
	if present == n {
		return
	}
	valid := v.valid[len(v.valid)-n:]
	switch v.kind {
	case kindString:
		v.strs = spreadOf(v.strs, valid, present)
	case kindInt:
		v.ints = spreadOf(v.ints, valid, present)
	case kindDecimal:
		v.decs = spreadOf(v.decs, valid, present)
	case kindBool:
		v.bools = spreadOf(v.bools, valid, present)
	}
}

func spreadOf[T any](vs []T, valid []bool, present int) []T {
	base := len(vs) - present
	packed := append([]T(nil), vs[base:]...)
	vs = vs[:base]
	var zero T
	k := 0
	for _, ok := range valid {
		if ok {
			vs = append(vs, packed[k])
			k++
		} else {
			vs = append(vs, zero)
		}
	}
	return vs
}

// decimalOf returns the decimal of b, a big-endian two's complement
// unscaled value of at most 16 bytes.
func decimalOf(b []byte) (decimal128.Num, error) {
	if len(b) == 0 || len(b) > 16 {
		return decimal128.Num{}, fmt.Errorf("a decimal of %d bytes", len(b))
	}
	var full [16]byte
	if b[0]&0x80 != 0 {
		for i := range full {
			full[i] = 0xff
		}
	}
	copy(full[16-len(b):], b)
	return decimal128.New(int64(binary.BigEndian.Uint64(full[:8])), binary.BigEndian.Uint64(full[8:])), nil
}

// sameValues returns the values of column descr at runs, n rows, from the
// bounds of the pages of cp alone, if every page that holds one of those
// rows holds one value, the same, or only nulls; false otherwise.
func sameValues(cp chunkPages, descr *schema.Column, runs []rowRange, n int, strs map[string]string) (*columnValues, bool, error) {
	var first *pageLoc
	j := 0
	for i := range cp.pages {
		p := &cp.pages[i]
		for j < len(runs) && runs[j].to <= p.first {
			j++
		}
		if j == len(runs) {
			break
		}
		if runs[j].from >= p.end {
			continue
		}
		if p.same == mixed || first != nil && (p.same != first.same || !bytes.Equal(p.value, first.value)) {
			return nil, false, nil
		}
		if first == nil {
			first = p
		}
	}
	if first == nil {
		return nil, false, nil
	}
	v := &columnValues{kind: valueKindOf(descr)}
	if first.same == allNull {
		v.valid = make([]bool, n)
	}
	switch v.kind {
	case kindString:
		s, ok := strs[string(first.value)]
		if !ok {
			s = string(first.value)
			strs[s] = s
		}
		v.strs = repeat(s, n)
	case kindInt:
		var x int64
		switch {
		case first.same == allNull:
		case descr.PhysicalType() == parquet.Types.Int64 && len(first.value) == 8:
			x = int64(binary.LittleEndian.Uint64(first.value))
		case descr.PhysicalType() == parquet.Types.Int32 && len(first.value) == 4:
			x = int64(int32(binary.LittleEndian.Uint32(first.value)))
		default:
			return nil, false, fmt.Errorf("column %s: a bound of %d bytes", descr.Name(), len(first.value))
		}
		v.ints = repeat(x, n)
	case kindDecimal:
		var d decimal128.Num
		if first.same == allSame {
			var err error
			switch descr.PhysicalType() {
			case parquet.Types.Int64, parquet.Types.Int32:
				if len(first.value) != 8 && len(first.value) != 4 {
					return nil, false, fmt.Errorf("column %s: a bound of %d bytes", descr.Name(), len(first.value))
				}
				var x int64
				if len(first.value) == 8 {
					x = int64(binary.LittleEndian.Uint64(first.value))
				} else {
					x = int64(int32(binary.LittleEndian.Uint32(first.value)))
				}
				d = decimal128.FromI64(x)
			default:
				if d, err = decimalOf(first.value); err != nil {
					return nil, false, fmt.Errorf("column %s: %w", descr.Name(), err)
				}
			}
		}
		v.decs = repeat(d, n)
	case kindBool:
		v.bools = repeat(first.same == allSame && len(first.value) == 1 && first.value[0] != 0, n)
	}
	return v, true, nil
}

func repeat[T any](x T, n int) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = x
	}
	return out
}

package cold

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/parquet"
)

// A pageDecoder takes the values of one column's rows off its encoded
// pages: dict keeps a chunk's dictionary page of n values, plain puts the
// values of a plain page at rows want (from the page's first), and index
// puts the dictionary's idx-th value.
type pageDecoder struct {
	dict  func(vals []byte, n int64) error
	plain func(vals []byte, want []rowRange) error
	index func(idx int64) error
}

// readEncoded returns the values of column col, required and flat, at
// runs, n rows, read off the pages' encoded bytes: a plain value where it
// lies, a dictionary-encoded one by its index, and no other row of the
// page decoded. It reads integers, decimals of a fixed width and strings;
// errUnfiltered for another column or page encoding. Strings are interned
// in strs.
func (g groupRead) readEncoded(col int, runs []rowRange, n int, strs map[string]string) (*columnValues, error) {
	descr := g.schema.Column(col)
	if descr.MaxDefinitionLevel() != 0 || descr.MaxRepetitionLevel() != 0 {
		return nil, errUnfiltered
	}
	out := &columnValues{kind: valueKindOf(descr)}
	var dec pageDecoder
	switch {
	case out.kind == kindString && descr.PhysicalType() == parquet.Types.ByteArray:
		out.strs = make([]string, 0, n)
		dec = stringDecoder(out, strs)
	case out.kind == kindInt || out.kind == kindDecimal:
		var w int64
		switch descr.PhysicalType() {
		case parquet.Types.Int32:
			w = 4
		case parquet.Types.Int64:
			w = 8
		case parquet.Types.FixedLenByteArray:
			w = int64(descr.TypeLength())
		}
		if w <= 0 || w > 16 || w != 4 && w != 8 && out.kind != kindDecimal {
			return nil, errUnfiltered
		}
		if out.kind == kindInt {
			out.ints = make([]int64, 0, n)
		} else {
			out.decs = make([]decimal128.Num, 0, n)
		}
		dec = fixedDecoder(out, w, descr.PhysicalType() == parquet.Types.FixedLenByteArray)
	default:
		return nil, errUnfiltered
	}
	var dictN int64 = -1
	j := 0
	err := g.eachPage(col, runs, func(vals []byte, n int64) error {
		dictN = n
		return dec.dict(vals, n)
	}, func(p pageLoc, vals []byte, enc parquet.Encoding) error {
		// The rows wanted of the page, from its first.
		var want []rowRange
		for j < len(runs) && runs[j].to <= p.first {
			j++
		}
		for k := j; k < len(runs) && runs[k].from < p.end; k++ {
			want = append(want, rowRange{max(runs[k].from, p.first) - p.first, min(runs[k].to, p.end) - p.first})
		}
		switch enc {
		case parquet.Encodings.Plain:
			return dec.plain(vals, want)
		case parquet.Encodings.RLEDict, parquet.Encodings.PlainDict:
			if dictN < 0 {
				return errors.New("a dictionary-encoded page without a dictionary")
			}
			var bad error
			q := 0
			err := eachRun(vals, p.end-p.first, func(r indexRun) {
				for q < len(want) && want[q].to <= r.i {
					q++
				}
				for x := q; x < len(want) && want[x].from < r.i+r.n && bad == nil; x++ {
					for row := max(want[x].from, r.i); row < min(want[x].to, r.i+r.n); row++ {
						idx := int64(r.at(row - r.i))
						if idx >= dictN {
							bad = fmt.Errorf("row %d: index %d of a dictionary of %d", row, idx, dictN)
							return
						}
						if bad = dec.index(idx); bad != nil {
							return
						}
					}
				}
			})
			return errors.Join(err, bad)
		}
		return errUnfiltered
	})
	if err != nil {
		return nil, err
	}
	if got := len(out.ints) + len(out.decs) + len(out.strs); got != n {
		return nil, fmt.Errorf("column %s: %d values read, want %d", descr.Name(), got, n)
	}
	return out, nil
}

// fixedDecoder puts values of w bytes each on out: INT32 or INT64, or
// with flba a decimal's big-endian bytes.
func fixedDecoder(out *columnValues, w int64, flba bool) pageDecoder {
	put := func(raw []byte) error {
		var x int64
		switch {
		case flba:
			d, err := decimalOf(raw)
			out.decs = append(out.decs, d)
			return err
		case w == 4:
			x = int64(int32(binary.LittleEndian.Uint32(raw)))
		default:
			x = int64(binary.LittleEndian.Uint64(raw))
		}
		if out.kind == kindInt {
			out.ints = append(out.ints, x)
		} else {
			out.decs = append(out.decs, decimal128.FromI64(x))
		}
		return nil
	}
	var dict []byte
	return pageDecoder{
		dict: func(vals []byte, n int64) error {
			if n < 0 || int64(len(vals)) < n*w {
				return fmt.Errorf("%d values of %d bytes in %d bytes", n, w, len(vals))
			}
			dict = bytes.Clone(vals[:n*w]) // the page reader reuses the page's buffer
			return nil
		},
		plain: func(vals []byte, want []rowRange) error {
			for _, r := range want {
				if r.to*w > int64(len(vals)) {
					return fmt.Errorf("row %d of %d bytes each beyond the page's %d bytes", r.to-1, w, len(vals))
				}
				for i := r.from; i < r.to; i++ {
					if err := put(vals[i*w : (i+1)*w]); err != nil {
						return err
					}
				}
			}
			return nil
		},
		index: func(idx int64) error { return put(dict[idx*w : (idx+1)*w]) },
	}
}

// stringDecoder puts byte arrays on out as strings, interned in strs.
func stringDecoder(out *columnValues, strs map[string]string) pageDecoder {
	intern := func(b []byte) string {
		s, ok := strs[string(b)]
		if !ok {
			s = string(b)
			strs[s] = s
		}
		return s
	}
	var dict []string
	return pageDecoder{
		dict: func(vals []byte, n int64) error {
			dict = make([]string, 0, min(n, int64(len(vals)/4)))
			for i := range n {
				v, rest, err := nextPlain(vals)
				if err != nil {
					return fmt.Errorf("value %d: %w", i, err)
				}
				dict, vals = append(dict, intern(v)), rest
			}
			return nil
		},
		plain: func(vals []byte, want []rowRange) error {
			var i int64
			for _, r := range want {
				for ; i < r.to; i++ {
					v, rest, err := nextPlain(vals)
					if err != nil {
						return fmt.Errorf("value %d: %w", i, err)
					}
					if i >= r.from {
						out.strs = append(out.strs, intern(v))
					}
					vals = rest
				}
			}
			return nil
		},
		index: func(idx int64) error {
			out.strs = append(out.strs, dict[idx])
			return nil
		},
	}
}

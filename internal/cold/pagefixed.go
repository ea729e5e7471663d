package cold

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/parquet"
)

// readFixed returns the values of column col, required, flat and of a
// fixed width (INT32, INT64, a decimal's FIXED_LEN_BYTE_ARRAY), at runs,
// n rows, read off the pages' encoded bytes: a plain value at its
// offset, a dictionary-encoded one by its index, and no other row of the
// page decoded. errUnfiltered for another column or page encoding.
func (g groupRead) readFixed(col int, runs []rowRange, n int) (*columnValues, error) {
	descr := g.schema.Column(col)
	kind := valueKindOf(descr)
	var w int64
	switch descr.PhysicalType() {
	case parquet.Types.Int32:
		w = 4
	case parquet.Types.Int64:
		w = 8
	case parquet.Types.FixedLenByteArray:
		if kind == kindDecimal {
			w = int64(descr.TypeLength())
		}
	}
	if w <= 0 || w > 16 || descr.MaxDefinitionLevel() != 0 || descr.MaxRepetitionLevel() != 0 || kind != kindInt && kind != kindDecimal {
		return nil, errUnfiltered
	}
	out := &columnValues{kind: kind}
	if kind == kindInt {
		out.ints = make([]int64, 0, n)
	} else {
		out.decs = make([]decimal128.Num, 0, n)
	}
	put := func(raw []byte) error {
		var x int64
		switch w {
		case 4:
			x = int64(int32(binary.LittleEndian.Uint32(raw)))
		case 8:
			x = int64(binary.LittleEndian.Uint64(raw))
		default:
			d, err := decimalOf(raw)
			out.decs = append(out.decs, d)
			return err
		}
		if kind == kindInt {
			out.ints = append(out.ints, x)
		} else {
			out.decs = append(out.decs, decimal128.FromI64(x))
		}
		return nil
	}
	var (
		dict  []byte
		dictN int64
	)
	j := 0
	err := g.eachPage(col, runs, func(vals []byte, n int64) error {
		if n < 0 || int64(len(vals)) < n*w {
			return fmt.Errorf("%d values of %d bytes in %d bytes", n, w, len(vals))
		}
		// The page reader reuses the page's buffer.
		dict, dictN = bytes.Clone(vals[:n*w]), n
		return nil
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
		case parquet.Encodings.RLEDict, parquet.Encodings.PlainDict:
			if dict == nil {
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
						if bad = put(dict[idx*w : (idx+1)*w]); bad != nil {
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
	if got := len(out.ints) + len(out.decs); got != n {
		return nil, fmt.Errorf("column %s: %d values read, want %d", descr.Name(), got, n)
	}
	return out, nil
}

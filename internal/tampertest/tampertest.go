// Package tampertest alters archived Parquet files as an attacker with
// write access to the warehouse would, for the tests of tamper evidence:
// the result is a valid Parquet file with the same columns, field ids and
// row count, one value changed, and, if asked, the same size.
package tampertest

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Holds reports whether the Parquet file at path holds the unscaled value
// v in its decimal column col.
func Holds(t testing.TB, path, col string, v int64) bool {
	t.Helper()
	tbl := read(t, path)
	defer tbl.Release()
	i := column(t, tbl, col)
	for _, c := range tbl.Column(i).Data().Chunks() {
		d := c.(*array.Decimal128)
		for j := range d.Len() {
			if d.IsValid(j) && d.Value(j) == decimal128.FromI64(v) {
				return true
			}
		}
	}
	return false
}

// SetDecimal rewrites the Parquet file at path with every value of its
// decimal column col that is the unscaled from set to to, every other
// value, the field ids and the row count as they were. With sameSize the
// file keeps its size: it is written without bloom filters, which makes it
// smaller, and padded with zeros between its last column chunk and its
// footer, where no reader looks (the footer's offsets are absolute). It
// returns the number of values changed, and fails the test if it cannot
// keep the size.
func SetDecimal(t testing.TB, path, col string, from, to int64, sameSize bool) int {
	t.Helper()
	orig, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	tbl := read(t, path)
	defer tbl.Release()
	ci := column(t, tbl, col)
	cols := make([]arrow.Column, tbl.NumCols())
	changed := 0
	for i := range cols {
		c := tbl.Column(i)
		if i != ci {
			c.Retain()
			cols[i] = *c
			continue
		}
		var chunks []arrow.Array
		for _, a := range c.Data().Chunks() {
			d := a.(*array.Decimal128)
			b := array.NewDecimal128Builder(memory.DefaultAllocator, d.DataType().(*arrow.Decimal128Type))
			for j := range d.Len() {
				switch {
				case !d.IsValid(j):
					b.AppendNull()
				case d.Value(j) == decimal128.FromI64(from):
					b.Append(decimal128.FromI64(to))
					changed++
				default:
					b.Append(d.Value(j))
				}
			}
			chunks = append(chunks, b.NewArray())
			b.Release()
		}
		ch := arrow.NewChunked(c.DataType(), chunks)
		for _, a := range chunks {
			a.Release()
		}
		cols[i] = *arrow.NewColumn(c.Field(), ch)
		ch.Release()
	}
	out := array.NewTable(tbl.Schema(), cols, tbl.NumRows())
	defer out.Release()
	for i := range cols {
		cols[i].Release()
	}
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithStoreDecimalAsInteger(true))
	if err := pqarrow.WriteTable(out, &buf, 1<<20, props, pqarrow.NewArrowWriterProperties()); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	if sameSize {
		pad := orig.Size() - int64(len(data))
		if pad < 0 {
			t.Fatalf("tampertest: %s rewritten has %d bytes, more than its %d", path, len(data), orig.Size())
		}
		footer := len(data) - 8 - int(binary.LittleEndian.Uint32(data[len(data)-8:]))
		data = append(data[:footer:footer], append(make([]byte, pad), data[footer:]...)...)
	}
	if err := os.WriteFile(path, data, orig.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
	return changed
}

func read(t testing.TB, path string) arrow.Table {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func column(t testing.TB, tbl arrow.Table, name string) int {
	t.Helper()
	idx := tbl.Schema().FieldIndices(name)
	if len(idx) != 1 {
		t.Fatalf("tampertest: no column %q", name)
	}
	if _, ok := tbl.Column(idx[0]).DataType().(*arrow.Decimal128Type); !ok {
		t.Fatalf("tampertest: column %q is %s, not a decimal", name, tbl.Column(idx[0]).DataType())
	}
	return idx[0]
}

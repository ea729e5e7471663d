package cold

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	icebergio "github.com/apache/iceberg-go/io"
)

// Footprint is where the bytes of a table's current data files go, read
// from their Parquet footers, and how far the value column is from its
// empirical entropy.
type Footprint struct {
	Files    int
	Bytes    int64 // total size of the data files
	Readings int64 // total row count
	// Columns are the column chunks' compressed sizes summed over every
	// file, in schema order.
	Columns []ColumnBytes
	// BloomBytes is the size of the bloom filters, headers included.
	BloomBytes int64
	// ValueDistinct is the number of distinct values of the value column
	// and ValueEntropyBits their empirical Shannon entropy in bits a
	// reading: what an ideal code for their distribution needs.
	ValueDistinct    int
	ValueEntropyBits float64
}

// ColumnBytes is one column's compressed bytes over every file.
type ColumnBytes struct {
	Name  string
	Bytes int64
}

// BytesPerReading returns Bytes/Readings, or 0 for an empty table.
func (f Footprint) BytesPerReading() float64 { return perReading(f.Bytes, f.Readings) }

// ValueEntropyBytes returns the value column's entropy in bytes a reading.
func (f Footprint) ValueEntropyBytes() float64 { return f.ValueEntropyBits / 8 }

// VsEntropy returns the file bytes a reading over the value column's
// entropy in bytes a reading, or 0 where the entropy is 0.
func (f Footprint) VsEntropy() float64 {
	if f.ValueEntropyBits == 0 {
		return 0
	}
	return f.BytesPerReading() / f.ValueEntropyBytes()
}

// ColumnBytesPerReading returns the column's bytes a reading.
func (f Footprint) ColumnBytesPerReading(c ColumnBytes) float64 {
	return perReading(c.Bytes, f.Readings)
}

// OverheadBytes returns the bytes of the files that are no column data:
// bloom filters, page indexes, footers and magic.
func (f Footprint) OverheadBytes() int64 {
	n := f.Bytes
	for _, c := range f.Columns {
		n -= c.Bytes
	}
	return n
}

func perReading(b, n int64) float64 {
	if n == 0 {
		return 0
	}
	return float64(b) / float64(n)
}

// Footprint reads the footer of every data file of t's current snapshot and
// the value column of each, to say where their bytes go.
func (c *Tier) Footprint(ctx context.Context, t *Table) (Footprint, error) {
	fail := func(err error) (Footprint, error) {
		return Footprint{}, fmt.Errorf("cold: footprint of %s: %w", t.decl.Name, err)
	}
	ice, err := c.load(ctx, t)
	if err != nil {
		return Footprint{}, err
	}
	snap := ice.CurrentSnapshot()
	if snap == nil {
		return Footprint{}, nil
	}
	fsys, err := ice.FS(ctx)
	if err != nil {
		return fail(err)
	}
	files, err := liveFiles(ctx, ice, snap)
	if err != nil {
		return fail(err)
	}
	var (
		fp     Footprint
		cols   = map[string]int64{}
		order  []string
		counts = map[[16]byte]int64{}
	)
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return Footprint{}, err
		}
		fp.Files++
		fp.Bytes += f.FileSizeBytes()
		fp.Readings += f.Count()
		if err := footprintOf(fsys, f.FilePath(), cols, &order, &fp.BloomBytes, counts); err != nil {
			return fail(err)
		}
	}
	for _, name := range order {
		fp.Columns = append(fp.Columns, ColumnBytes{Name: name, Bytes: cols[name]})
	}
	fp.ValueDistinct = len(counts)
	fp.ValueEntropyBits = entropyBits(counts)
	return fp, nil
}

// footprintOf adds the column chunk sizes and bloom filter bytes of the
// file at loc, and counts its values.
func footprintOf(fsys icebergio.IO, loc string, cols map[string]int64, order *[]string, bloom *int64, counts map[[16]byte]int64) error {
	r, err := fsys.Open(loc)
	if err != nil {
		return err
	}
	defer r.Close()
	pr, err := file.NewParquetReader(r)
	if err != nil {
		return fmt.Errorf("%s: %w", loc, err)
	}
	defer pr.Close()
	md := pr.MetaData()
	for g := range md.NumRowGroups() {
		rg := md.RowGroup(g)
		for i := range rg.NumColumns() {
			cc, err := rg.ColumnChunk(i)
			if err != nil {
				return fmt.Errorf("%s: %w", loc, err)
			}
			name := cc.PathInSchema().String()
			if _, ok := cols[name]; !ok {
				*order = append(*order, name)
			}
			cols[name] += cc.TotalCompressedSize()
			if cc.BloomFilterOffset() > 0 {
				*bloom += int64(cc.BloomFilterLength())
			}
		}
	}
	idx := md.Schema.ColumnIndexByName("value")
	if idx < 0 {
		return fmt.Errorf("%s: no value column", loc)
	}
	return countValues(pr, idx, counts)
}

// countValues counts the distinct values of column idx, whatever its
// physical type, by their bytes.
func countValues(pr *file.Reader, idx int, counts map[[16]byte]int64) error {
	for g := range pr.NumRowGroups() {
		cr, err := pr.RowGroup(g).Column(idx)
		if err != nil {
			return err
		}
		switch cr := cr.(type) {
		case *file.FixedLenByteArrayColumnChunkReader:
			err = countBatches(cr, counts, func(v parquet.FixedLenByteArray) (k [16]byte) {
				copy(k[:], v)
				return k
			})
		case *file.Int64ColumnChunkReader:
			err = countBatches(cr, counts, func(v int64) (k [16]byte) {
				for i := range 8 {
					k[i] = byte(v >> (8 * i))
				}
				return k
			})
		default:
			err = fmt.Errorf("value column of physical type %s", cr.Type())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// A batchReader reads a column chunk's values in batches.
type batchReader[T any] interface {
	HasNext() bool
	ReadBatch(n int64, values []T, def, rep []int16) (int64, int, error)
}

// countBatches counts the values cr reads by the key of each.
func countBatches[T any](cr batchReader[T], counts map[[16]byte]int64, key func(T) [16]byte) error {
	vals := make([]T, 8192)
	for cr.HasNext() {
		_, n, err := cr.ReadBatch(int64(len(vals)), vals, nil, nil)
		if err != nil {
			return err
		}
		for _, v := range vals[:n] {
			counts[key(v)]++
		}
	}
	return nil
}

// entropyBits returns the empirical Shannon entropy of counts in bits a
// value, summed in a fixed order so that it does not vary between runs.
func entropyBits(counts map[[16]byte]int64) float64 {
	ns := make([]int64, 0, len(counts))
	var total int64
	for _, n := range counts {
		ns = append(ns, n)
		total += n
	}
	sort.Slice(ns, func(i, j int) bool { return ns[i] < ns[j] })
	h := 0.0
	for _, n := range ns {
		p := float64(n) / float64(total)
		h -= p * math.Log2(p)
	}
	return h
}

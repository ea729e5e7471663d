package cold

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/meterstore/meterstore/series"
)

// A SeriesReader reads the rows of one series from a plan's data files
// with arrow-go's Parquet column chunk readers, no SQL engine in between:
// row groups whose statistics or bloom filter exclude the market location
// are skipped, the page index narrows the rest to the pages that can hold
// it, the market location and OBIS code columns alone are matched there,
// on their encoded values (see match), and the other columns are decoded
// only in the pages that hold the rows that matched. Footers,
// page indexes and bloom filters are kept per file in a bounded cache. It
// is safe for concurrent use.
type SeriesReader struct {
	cache *footerCache
	// props read footers, page indexes and bloom filters; pages the
	// pages a read selected, each column's in one read of the file.
	props *parquet.ReaderProperties
	pages *pagePool
}

// NewSeriesReader returns a reader whose footer cache holds at most
// maxBytes of serialized footers and page indexes (zero:
// DefaultFooterCacheBytes; negative: none). observe, if set, is told of
// every lookup in it and of its size then.
func NewSeriesReader(maxBytes int64, observe func(hit bool, files int, bytes int64)) *SeriesReader {
	props := parquet.NewReaderProperties(memory.DefaultAllocator)
	props.BufferedStreamEnabled = true
	return &SeriesReader{cache: newFooterCache(maxBytes, observe), props: props,
		pages: newPagePool(parquet.NewReaderProperties(memory.DefaultAllocator))}
}

// CacheSize returns the files whose footers the cache holds and their
// bytes.
func (r *SeriesReader) CacheSize() (files int, bytes int64) { return r.cache.size() }

// A SeriesFilter selects the rows of one series for SeriesReader.Read.
type SeriesFilter struct {
	MaLo, OBIS string
	// Identity holds values of identity columns, by name.
	Identity map[string]string
	// From and To bound from, [From, To); a zero bound is open.
	From, To time.Time
	// KnownAt, if not zero, hides the rows recorded after it.
	KnownAt time.Time
	// Marks says that the superseded marks hold (no ceiling hides a later
	// version): the files of superseded versions are not read, and rows
	// marked superseded are left out. A marked row never wins then, so
	// resolving the rest by the rule gives what resolving every row does.
	Marks bool
}

// Read returns the readings of p's files, which must be local paths (see
// Plan.Local), that f selects, resolved by the rule of readings (per
// merge key the highest version, then the latest recorded_at), in no
// particular order.
func (r *SeriesReader) Read(ctx context.Context, decl *series.Table, p Plan, f SeriesFilter) ([]series.Reading, error) {
	// The winner of each merge key, by its index in out: a reading is
	// copied once, where it first wins, and replaced in place.
	win := map[winnerKey]int{}
	var out []series.Reading
	ident := decl.Identity()
	for i, path := range p.Files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		kind := Open
		if i < len(p.Kinds) {
			kind = p.Kinds[i]
		}
		if f.Marks && kind == Superseded {
			continue
		}
		err := r.readFile(ctx, decl, path, f, func(rd series.Reading) {
			k := mergeKeyOf(ident, &rd)
			at, ok := win[k]
			if !ok {
				win[k] = len(out)
				out = append(out, rd)
				return
			}
			if w := &out[at]; rd.Version > w.Version || rd.Version == w.Version && rd.RecordedAt.After(w.RecordedAt) {
				*w = rd
			}
		})
		if err != nil {
			return nil, fmt.Errorf("cold: read series of %s from %s: %w", decl.Name, path, err)
		}
	}
	return out, nil
}

// A winnerKey is the merge key of a reading but its market location and
// OBIS code, which the filter fixes: from, in microseconds, and the
// identity values.
type winnerKey struct {
	from  int64
	ident string
}

// mergeKeyOf returns the winnerKey of rd in a table of the identity
// columns ident.
func mergeKeyOf(ident []series.Column, rd *series.Reading) winnerKey {
	k := winnerKey{from: rd.From.UnixMicro()}
	if len(ident) == 0 {
		return k
	}
	var b strings.Builder
	for _, c := range ident {
		b.WriteString(rd.Extra[c.Name])
		b.WriteByte(0)
	}
	k.ident = b.String()
	return k
}

// readFile calls fn with every row of the data file at path that f
// selects. The file's footer and page index come from the cache once
// read; only the pages the page index leaves are read, with arrow-go's
// column chunk readers (see pageStream).
func (r *SeriesReader) readFile(ctx context.Context, decl *series.Table, path string, f SeriesFilter, fn func(series.Reading)) error {
	osf, err := os.Open(path)
	if err != nil {
		return err
	}
	defer osf.Close()
	fi, err := osf.Stat()
	if err != nil {
		return err
	}
	key := footerKey{path: path, size: fi.Size(), mtime: fi.ModTime()}
	ft := r.cache.get(key)
	// The file's reader, made only to read what the cache lacks.
	var pf *file.Reader
	open := func() (*file.Reader, error) {
		if pf != nil {
			return pf, nil
		}
		opts := []file.ReadOption{file.WithReadProps(r.props)}
		if ft != nil {
			opts = append(opts, file.WithMetadata(ft.meta))
		}
		var err error
		pf, err = file.NewParquetReader(osf, opts...)
		return pf, err
	}
	if ft == nil {
		if _, err := open(); err != nil {
			return err
		}
		ft = &footer{meta: pf.MetaData(), groups: map[int]*groupIndex{}, blooms: map[int]metadata.BloomFilter{}, bytes: int64(pf.MetaData().Size())}
		r.cache.put(key, ft)
	}
	s := ft.meta.Schema
	col := func(name string) int { return s.ColumnIndexByName(name) }
	malo, obis, from, sup := col("malo_id"), col("obis_code"), col("from"), col(series.ColumnSuperseded)
	if malo < 0 || from < 0 {
		return fmt.Errorf("no column malo_id or from")
	}
	if obis < 0 {
		return nil // no row holds the OBIS code
	}
	for _, c := range []int{malo, obis} {
		if t := s.Column(c).PhysicalType(); t != parquet.Types.ByteArray {
			return fmt.Errorf("%s is %s, not a string", s.Column(c).Name(), t)
		}
	}
	// The columns a reading is decoded from: the declared ones the file
	// has, and superseded; not malo_id and obis_code, which the rows
	// matched hold as the filter gives them.
	var cols []int
	for _, c := range Schema(decl).Fields() {
		if i := col(c.Name); i >= 0 && i != malo && i != obis {
			cols = append(cols, i)
		}
	}
	if sup >= 0 && !slices.Contains(cols, sup) {
		cols = append(cols, sup)
	}
	lo, hi := int64(-1)<<63, int64(1<<63-1)
	if !f.From.IsZero() {
		lo = int64(micros(f.From))
	}
	if !f.To.IsZero() {
		hi = int64(micros(f.To)) - 1
	}
	for g := range ft.meta.NumRowGroups() {
		if err := ctx.Err(); err != nil {
			return err
		}
		rg := ft.meta.RowGroup(g)
		if !mayHold(rg, malo, []byte(f.MaLo)) || !mayHold(rg, obis, []byte(f.OBIS)) || !mayOverlap(rg, from, lo, hi) {
			continue
		}
		if f.Marks && sup >= 0 && allTrue(rg, sup) {
			continue
		}
		if ok, err := r.bloomAdmits(key, ft, g, malo, f.MaLo, open); err != nil || !ok {
			if err != nil {
				return err
			}
			continue
		}
		idx, err := r.groupIndex(key, ft, g, malo, from, open)
		if err != nil {
			return err
		}
		ranges := idx.candidates([]byte(f.MaLo), lo, hi, rg.NumRows())
		if len(ranges) == 0 {
			continue
		}
		gr := groupRead{r: osf, pages: r.pages, meta: rg, idx: idx, schema: s}
		runs, err := gr.match(malo, ranges, f.MaLo)
		if err == nil && len(runs) > 0 {
			runs, err = gr.match(obis, runs, f.OBIS)
		}
		if err != nil {
			return err
		}
		if len(runs) == 0 {
			continue
		}
		if err := gr.rows(decl, cols, sup, runs, f, fn); err != nil {
			return err
		}
	}
	return nil
}

// A groupRead reads pages of one row group of an open data file.
type groupRead struct {
	r      io.ReaderAt
	pages  *pagePool
	meta   *metadata.RowGroupMetaData
	idx    *groupIndex
	schema *schema.Schema
}

// open returns a cursor over the pages of column col that hold rows of
// runs.
func (g groupRead) open(col int, runs []rowRange) (*columnCursor, error) {
	cc, err := g.meta.ColumnChunk(col)
	if err != nil {
		return nil, err
	}
	if cc.CryptoMetadata() != nil {
		return nil, fmt.Errorf("column %s is encrypted", g.schema.Column(col).Name())
	}
	return g.pages.open(g.r, g.schema.Column(col), cc.Compression(), g.idx.cols[col], runs)
}

// matchBatch is how many values matching decodes at once.
const matchBatch = 1024

// matching reads the byte array column col over ranges, sorted and
// disjoint, and returns the runs of rows whose value is want, decoding
// every value: for pages match does not read.
func (g groupRead) matching(col int, ranges []rowRange, want string) ([]rowRange, error) {
	cur, err := g.open(col, ranges)
	if err != nil {
		return nil, err
	}
	defer cur.close()
	name := cur.descr.Name()
	cr, ok := cur.cr.(*file.ByteArrayColumnChunkReader)
	if !ok {
		return nil, fmt.Errorf("%s is read by %T", name, cur.cr)
	}
	optional := cur.descr.MaxDefinitionLevel() > 0
	buf := make([]parquet.ByteArray, matchBatch)
	var defs []int16
	if optional {
		defs = make([]int16, matchBatch)
	}
	var runs []rowRange
	for _, rr := range ranges {
		if err := cur.seek(rr.from); err != nil {
			return nil, err
		}
		for at := rr.from; at < rr.to; {
			n := min(rr.to-at, matchBatch)
			// Within a page, uncopied: only compared.
			levels, vals, err := cr.ReadBatchInPage(n, buf, defs, nil)
			if err != nil {
				return nil, fmt.Errorf("%s: rows from %d: %w", name, at, err)
			}
			if levels == 0 && !cr.HasNext() {
				return nil, fmt.Errorf("%s: no rows from %d, want %d", name, at, n)
			}
			v := 0
			for i := range levels {
				if optional && defs[i] != cur.descr.MaxDefinitionLevel() {
					continue
				}
				if string(buf[v]) == want {
					row := at + i
					if k := len(runs); k > 0 && runs[k-1].to == row {
						runs[k-1].to++
					} else {
						runs = append(runs, rowRange{row, row + 1})
					}
				}
				v++
			}
			if v != vals {
				return nil, fmt.Errorf("%s: %d values for %d present rows", name, vals, v)
			}
			at += levels
			cur.pos += levels
		}
	}
	return runs, nil
}

// rows reads columns cols at runs, decodes the rows and calls fn with
// those f selects.
func (g groupRead) rows(decl *series.Table, cols []int, sup int, runs []rowRange, f SeriesFilter, fn func(series.Reading)) error {
	var n int
	for _, r := range runs {
		n += int(r.to - r.from)
	}
	strs := map[string]string{}
	var (
		set    []columnSetter
		marked *columnValues
	)
	for _, c := range cols {
		v, same, err := sameValues(g.idx.cols[c], g.schema.Column(c), runs, n, strs)
		if err != nil {
			return err
		}
		if !same {
			v, err = g.readEncoded(c, runs, n, strs)
		}
		if errors.Is(err, errUnfiltered) {
			cur, err := g.open(c, runs)
			if err != nil {
				return err
			}
			v, err = cur.readRuns(runs, strs)
			cur.close()
			if err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
		if c == sup {
			if v.kind != kindBool {
				return fmt.Errorf("column %s is not a boolean", series.ColumnSuperseded)
			}
			marked = v
			continue
		}
		s, err := setterOf(decl, g.schema.Column(c), v)
		if err != nil {
			return err
		}
		if s != nil {
			set = append(set, s)
		}
	}
	for i := range n {
		if f.Marks && marked != nil && (marked.valid == nil || marked.valid[i]) && marked.bools[i] {
			continue
		}
		rd := series.Reading{MaLo: f.MaLo, OBIS: f.OBIS}
		for _, s := range set {
			if err := s(i, &rd); err != nil {
				return err
			}
		}
		if selects(decl, f, &rd) {
			fn(rd)
		}
	}
	return nil
}

// selects reports whether f selects rd, whose market location matched.
func selects(decl *series.Table, f SeriesFilter, rd *series.Reading) bool {
	if rd.OBIS != f.OBIS || (!f.From.IsZero() && rd.From.Before(f.From)) || (!f.To.IsZero() && !rd.From.Before(f.To)) {
		return false
	}
	if !f.KnownAt.IsZero() && rd.RecordedAt.After(f.KnownAt) {
		return false
	}
	for name, v := range f.Identity {
		if rd.Extra[name] != v {
			return false
		}
	}
	return true
}

// mayHold reports whether the statistics of column col of rg admit v; a
// column without them admits every value.
func mayHold(rg *metadata.RowGroupMetaData, col int, v []byte) bool {
	st := stats(rg, col)
	if st == nil {
		return true
	}
	return bytes.Compare(v, st.EncodeMin()) >= 0 && bytes.Compare(v, st.EncodeMax()) <= 0
}

// mayOverlap reports whether the statistics of the timestamp column col
// of rg admit a value in [lo, hi].
func mayOverlap(rg *metadata.RowGroupMetaData, col int, lo, hi int64) bool {
	st := stats(rg, col)
	if st == nil {
		return true
	}
	mn, okMin := int64At(st.EncodeMin())
	mx, okMax := int64At(st.EncodeMax())
	return !(okMax && mx < lo) && !(okMin && mn > hi)
}

// allTrue reports whether the statistics of the boolean column col of
// rg say every value is true.
func allTrue(rg *metadata.RowGroupMetaData, col int) bool {
	st := stats(rg, col)
	if st == nil || !st.HasNullCount() || st.NullCount() != 0 {
		return false
	}
	mn := st.EncodeMin()
	return len(mn) == 1 && mn[0] == 1
}

// stats returns the statistics of column col of rg with a min and max,
// nil if it has none.
func stats(rg *metadata.RowGroupMetaData, col int) metadata.TypedStatistics {
	cc, err := rg.ColumnChunk(col)
	if err != nil {
		return nil
	}
	if ok, err := cc.StatsSet(); err != nil || !ok {
		return nil
	}
	st, err := cc.Statistics()
	if err != nil || st == nil || !st.HasMinMax() {
		return nil
	}
	return st
}

func int64At(b []byte) (int64, bool) {
	if len(b) != 8 {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(b)), true
}

// bloomAdmits reports whether the bloom filter of column col in row group
// g of the file of ft may hold v; true where there is none. The filter is
// read through open the first time and kept with the footer.
func (r *SeriesReader) bloomAdmits(key footerKey, ft *footer, g, col int, v string, open func() (*file.Reader, error)) (bool, error) {
	ft.mu.Lock()
	bf, ok := ft.blooms[g]
	ft.mu.Unlock()
	if !ok {
		pf, err := open()
		if err != nil {
			return false, err
		}
		rg, err := pf.GetBloomFilterReader().RowGroup(g)
		if err != nil {
			return false, err
		}
		if bf, err = rg.GetColumnBloomFilter(col); err != nil {
			return false, err
		}
		ft.mu.Lock()
		if prev, ok := ft.blooms[g]; ok {
			bf = prev
		} else {
			ft.blooms[g] = bf // nil: none
			if bf != nil {
				ft.bytes += bf.Size()
			}
		}
		ft.mu.Unlock()
		r.cache.put(key, ft)
	}
	if bf == nil {
		return true, nil
	}
	return bf.CheckHash(metadata.GetHash(bf.Hasher(), parquet.ByteArray(v))), nil
}

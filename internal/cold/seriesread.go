package cold

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/meterstore/meterstore/series"
)

// A SeriesReader reads the rows of one series from a plan's data files
// with arrow-go's Parquet reader, no SQL engine in between: row groups
// whose statistics or bloom filter exclude the market location are
// skipped, the page index narrows the rest to the pages that can hold
// it, the market location column alone is read there, and the other
// columns only at the rows that matched. Footers and page indexes are
// kept per file in a bounded cache. It is safe for concurrent use.
type SeriesReader struct {
	cache *footerCache
	props *parquet.ReaderProperties
}

// NewSeriesReader returns a reader whose footer cache holds at most
// maxBytes of serialized footers and page indexes (zero:
// DefaultFooterCacheBytes; negative: none). observe, if set, is told of
// every lookup in it and of its size then.
func NewSeriesReader(maxBytes int64, observe func(hit bool, files int, bytes int64)) *SeriesReader {
	props := parquet.NewReaderProperties(memory.DefaultAllocator)
	// Read the pages asked for, not whole column chunks.
	props.BufferedStreamEnabled = true
	return &SeriesReader{cache: newFooterCache(maxBytes, observe), props: props}
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
	win := map[string]series.Reading{}
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
			k := mergeKeyOf(decl, &rd)
			if w, ok := win[k]; !ok || rd.Version > w.Version || rd.Version == w.Version && rd.RecordedAt.After(w.RecordedAt) {
				win[k] = rd
			}
		})
		if err != nil {
			return nil, fmt.Errorf("cold: read series of %s from %s: %w", decl.Name, path, err)
		}
	}
	out := make([]series.Reading, 0, len(win))
	for _, rd := range win {
		out = append(out, rd)
	}
	return out, nil
}

// mergeKeyOf returns the merge key of rd but its market location and
// OBIS code, which the filter fixes: from and the identity values.
func mergeKeyOf(decl *series.Table, rd *series.Reading) string {
	var b strings.Builder
	b.WriteString(rd.From.Format(time.RFC3339Nano))
	for _, c := range decl.Identity() {
		b.WriteByte(0)
		b.WriteString(rd.Extra[c.Name])
	}
	return b.String()
}

// readFile calls fn with every row of the data file at path that f
// selects.
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
	opts := []file.ReadOption{file.WithReadProps(r.props)}
	if ft != nil {
		opts = append(opts, file.WithMetadata(ft.meta))
	}
	pf, err := file.NewParquetReader(osf, opts...)
	if err != nil {
		return err
	}
	if ft == nil {
		ft = &footer{meta: pf.MetaData(), groups: map[int]*groupIndex{}, bytes: int64(pf.MetaData().Size())}
		r.cache.put(key, ft)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return err
	}
	s := ft.meta.Schema
	col := func(name string) int { return s.ColumnIndexByName(name) }
	malo, obis, from, sup := col("malo_id"), col("obis_code"), col("from"), col(series.ColumnSuperseded)
	if malo < 0 || from < 0 {
		return fmt.Errorf("no column malo_id or from")
	}
	// The columns a reading is decoded from: the declared ones the file
	// has, and superseded.
	var cols []int
	for _, c := range Schema(decl).Fields() {
		if i := col(c.Name); i >= 0 {
			cols = append(cols, i)
		}
	}
	lo, hi := int64(-1)<<63, int64(1<<63-1)
	if !f.From.IsZero() {
		lo = int64(micros(f.From))
	}
	if !f.To.IsZero() {
		hi = int64(micros(f.To)) - 1
	}
	for g := range ft.meta.NumRowGroups() {
		rg := ft.meta.RowGroup(g)
		if !mayHold(rg, malo, []byte(f.MaLo)) || (obis >= 0 && !mayHold(rg, obis, []byte(f.OBIS))) || !mayOverlap(rg, from, lo, hi) {
			continue
		}
		if f.Marks && sup >= 0 && allTrue(rg, sup) {
			continue
		}
		if ok, err := bloomAdmits(pf, g, malo, f.MaLo); err != nil || !ok {
			if err != nil {
				return err
			}
			continue
		}
		idx, err := r.groupIndex(key, ft, pf, g, malo, from)
		if err != nil {
			return err
		}
		ranges := idx.candidates([]byte(f.MaLo), lo, hi, rg.NumRows())
		if len(ranges) == 0 {
			continue
		}
		runs, err := matching(ctx, fr, g, malo, ranges, f.MaLo)
		if err != nil {
			return err
		}
		if len(runs) == 0 {
			continue
		}
		if err := r.readRuns(ctx, decl, fr, g, cols, sup, runs, f, fn); err != nil {
			return err
		}
	}
	return nil
}

// A rowRange is rows [from, to) of a row group.
type rowRange struct{ from, to int64 }

// matching reads column malo over ranges of row group g and returns the
// runs of rows whose value is want.
func matching(ctx context.Context, fr *pqarrow.FileReader, g, malo int, ranges []rowRange, want string) ([]rowRange, error) {
	rds, _, err := fr.GetFieldReaders(ctx, []int{malo}, []int{g})
	if err != nil {
		return nil, err
	}
	rd := rds[0]
	defer rd.Release()
	var runs []rowRange
	for _, rr := range ranges {
		if err := rd.SeekToRow(rr.from); err != nil {
			return nil, err
		}
		ch, err := rd.NextBatch(rr.to - rr.from)
		if err != nil {
			return nil, err
		}
		at := rr.from
		for _, c := range ch.Chunks() {
			a, ok := c.(stringArray)
			if !ok {
				ch.Release()
				return nil, fmt.Errorf("malo_id is %s, not a string", c.DataType())
			}
			for i := range a.Len() {
				if !a.IsNull(i) && a.Value(i) == want {
					row := at + int64(i)
					if n := len(runs); n > 0 && runs[n-1].to == row {
						runs[n-1].to++
					} else {
						runs = append(runs, rowRange{row, row + 1})
					}
				}
			}
			at += int64(a.Len())
		}
		ch.Release()
	}
	return runs, nil
}

// readRuns reads columns cols of row group g at runs, decodes the rows
// and calls fn with those f selects.
func (r *SeriesReader) readRuns(ctx context.Context, decl *series.Table, fr *pqarrow.FileReader, g int, cols []int, sup int, runs []rowRange, f SeriesFilter, fn func(series.Reading)) error {
	leaves := slices.Clone(cols)
	if sup >= 0 && !slices.Contains(leaves, sup) {
		leaves = append(leaves, sup)
	}
	rds, sc, err := fr.GetFieldReaders(ctx, leaves, []int{g})
	if err != nil {
		return err
	}
	defer func() {
		for _, rd := range rds {
			rd.Release()
		}
	}()
	d := &decoder{decl: decl}
	supAt := -1
	for i, fd := range sc.Fields() {
		if fd.Name == series.ColumnSuperseded {
			supAt = i
		}
	}
	for _, run := range runs {
		arrs := make([]arrow.Array, len(rds))
		release := func() {
			for _, a := range arrs {
				if a != nil {
					a.Release()
				}
			}
		}
		for i, rd := range rds {
			if err := rd.SeekToRow(run.from); err != nil {
				release()
				return err
			}
			ch, err := rd.NextBatch(run.to - run.from)
			if err != nil {
				release()
				return err
			}
			a, err := array.Concatenate(ch.Chunks(), memory.DefaultAllocator)
			ch.Release()
			if err != nil {
				release()
				return err
			}
			arrs[i] = a
		}
		rec := array.NewRecordBatch(sc, arrs, run.to-run.from)
		release()
		set, err := d.setters(rec)
		if err != nil {
			rec.Release()
			return err
		}
		var marked *array.Boolean
		if supAt >= 0 {
			marked, _ = rec.Column(supAt).(*array.Boolean)
		}
		for i := range int(rec.NumRows()) {
			if f.Marks && marked != nil && marked.IsValid(i) && marked.Value(i) {
				continue
			}
			var rd series.Reading
			for _, s := range set {
				if err := s(i, &rd); err != nil {
					rec.Release()
					return err
				}
			}
			if selects(decl, f, &rd) {
				fn(rd)
			}
		}
		rec.Release()
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
// g may hold v; true where there is none.
func bloomAdmits(pf *file.Reader, g, col int, v string) (bool, error) {
	rg, err := pf.GetBloomFilterReader().RowGroup(g)
	if err != nil {
		return false, err
	}
	bf, err := rg.GetColumnBloomFilter(col)
	if err != nil || bf == nil {
		return true, err
	}
	return bf.CheckHash(metadata.GetHash(bf.Hasher(), parquet.ByteArray(v))), nil
}

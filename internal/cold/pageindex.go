package cold

import (
	"bytes"
	"fmt"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// A groupIndex is what the page index of a row group says, read once and
// kept with the file's footer, so that a typed read reads no index again:
// where each column's pages lie in the file and which rows they hold, and
// the bounds of the pages of the columns a read prunes by (malo_id and
// from).
type groupIndex struct {
	cols []chunkPages // by column ordinal
	malo []pageSpan
	from []pageSpan
}

// chunkPages places the pages of one column chunk: its dictionary page,
// if any, at [dictOff, dictOff+dictLen) of the file, and its data pages
// in order. A chunk without an offset index is one page of every row.
type chunkPages struct {
	dictOff, dictLen int64
	pages            []pageLoc
}

// A pageLoc is one data page: rows [first, end) of the row group, and
// its bytes, header included, at [off, off+size) of the file. Where the
// page's bounds say that every row holds the same value (its minimum is
// its maximum and it has no null), or none, a read takes the value from
// them and reads no page: most columns of a fleet's files (OBIS code,
// unit, commodity, version scope) hold one value a page.
type pageLoc struct {
	first, end int64
	off, size  int64
	same       sameness
	value      []byte // the one value, plain-encoded, where same is allSame
}

// sameness is what a page's bounds say of its values.
type sameness uint8

const (
	mixed   sameness = iota // unknown, or not all the same
	allSame                 // every row holds value
	allNull                 // every row is null
)

// A pageSpan is one page of a column a read prunes by: rows [first, end)
// of the row group, and the encoded bounds of its values; bounded is
// false where they are unknown, empty where every value is null.
type pageSpan struct {
	first, end int64
	min, max   []byte
	bounded    bool
	empty      bool
}

// groupIndex returns the page index of row group g of the file of ft,
// reading it through open the first time and keeping it with the footer.
func (r *SeriesReader) groupIndex(key footerKey, ft *footer, g, malo, from int, open func() (*file.Reader, error)) (*groupIndex, error) {
	ft.mu.Lock()
	idx, ok := ft.groups[g]
	ft.mu.Unlock()
	if ok {
		return idx, nil
	}
	pf, err := open()
	if err != nil {
		return nil, err
	}
	idx, n, err := readGroupIndex(pf, ft.meta.RowGroup(g), g, malo, from)
	if err != nil {
		return nil, err
	}
	ft.mu.Lock()
	if prev, ok := ft.groups[g]; ok {
		idx = prev
	} else {
		ft.groups[g] = idx
		ft.bytes += n
	}
	ft.mu.Unlock()
	r.cache.put(key, ft)
	return idx, nil
}

// readGroupIndex reads the page index of row group g, whose metadata is
// rg, through pf, and returns it with the bytes it takes.
func readGroupIndex(pf *file.Reader, rg *metadata.RowGroupMetaData, g, malo, from int) (*groupIndex, int64, error) {
	var pir *metadata.RowGroupPageIndexReader
	if pr := pf.GetPageIndexReader(); pr != nil {
		var err error
		if pir, err = pr.RowGroup(g); err != nil {
			return nil, 0, err
		}
	}
	rows := rg.NumRows()
	idx := &groupIndex{cols: make([]chunkPages, rg.NumColumns())}
	var n int64
	for c := range idx.cols {
		cc, err := rg.ColumnChunk(c)
		if err != nil {
			return nil, 0, err
		}
		cp, size, err := pagesOf(pir, cc, c, rows)
		if err != nil {
			return nil, 0, fmt.Errorf("column %d: %w", c, err)
		}
		more, err := markSame(pir, cc, c, pf.MetaData().Schema.Column(c).MaxDefinitionLevel() == 0, cp.pages)
		if err != nil {
			return nil, 0, fmt.Errorf("column %d: %w", c, err)
		}
		idx.cols[c], n = cp, n+size+more
	}
	for _, c := range []struct {
		col  int
		into *[]pageSpan
	}{{malo, &idx.malo}, {from, &idx.from}} {
		spans, size, err := pageSpans(pir, idx.cols[c.col].pages, c.col)
		if err != nil {
			return nil, 0, err
		}
		*c.into, n = spans, n+size
	}
	return idx, n, nil
}

// pagesOf returns where the pages of column chunk cc, column col of a
// row group of rows rows, lie, by its offset index (pir nil: the row
// group has none), and the bytes that takes.
func pagesOf(pir *metadata.RowGroupPageIndexReader, cc *metadata.ColumnChunkMetaData, col int, rows int64) (chunkPages, int64, error) {
	start := cc.DataPageOffset()
	if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < start {
		start = cc.DictionaryPageOffset()
	}
	end := start + cc.TotalCompressedSize()
	// Without an offset index: one page from the first data page on, the
	// dictionary page before it.
	whole := chunkPages{dictOff: start, dictLen: cc.DataPageOffset() - start,
		pages: []pageLoc{{first: 0, end: rows, off: cc.DataPageOffset(), size: end - cc.DataPageOffset()}}}
	if pir == nil {
		return whole, 32, nil
	}
	oi, err := pir.GetOffsetIndex(col)
	if err != nil || oi == nil {
		return whole, 32, err
	}
	locs := oi.GetPageLocations()
	if len(locs) == 0 {
		return whole, 32, nil
	}
	// What lies before the first data page is the dictionary page.
	cp := chunkPages{dictOff: start, dictLen: locs[0].Offset - start, pages: make([]pageLoc, len(locs))}
	for i, l := range locs {
		if l.Offset < start || l.Offset+int64(l.CompressedPageSize) > end || l.FirstRowIndex < 0 || l.FirstRowIndex > rows ||
			i > 0 && l.FirstRowIndex < locs[i-1].FirstRowIndex {
			return chunkPages{}, 0, fmt.Errorf("offset index: page %d at %d (%d bytes, from row %d) outside its column chunk", i, l.Offset, l.CompressedPageSize, l.FirstRowIndex)
		}
		cp.pages[i] = pageLoc{first: l.FirstRowIndex, end: rows, off: l.Offset, size: int64(l.CompressedPageSize)}
		if i > 0 {
			cp.pages[i-1].end = l.FirstRowIndex
		}
	}
	if cp.dictLen < 0 {
		return chunkPages{}, 0, fmt.Errorf("offset index: first page at %d, before the column chunk at %d", locs[0].Offset, start)
	}
	return cp, int64(len(locs))*32 + 16, nil
}

// markSame marks the pages of column col, chunk cc, whose bounds in its
// column index (pir nil: none), or in the chunk's statistics for a chunk
// of one page, say that they hold one value or only nulls; required says
// the column has no nulls. It returns the bytes the values take.
func markSame(pir *metadata.RowGroupPageIndexReader, cc *metadata.ColumnChunkMetaData, col int, required bool, pages []pageLoc) (int64, error) {
	var ci metadata.ColumnIndex
	if pir != nil {
		var err error
		if ci, err = pir.GetColumnIndex(col); err != nil {
			return 0, err
		}
	}
	var n int64
	if ci == nil {
		if len(pages) != 1 {
			return 0, nil
		}
		ok, err := cc.StatsSet()
		if err != nil || !ok {
			return 0, err
		}
		st, err := cc.Statistics()
		if err != nil || st == nil || !st.HasNullCount() {
			return 0, err
		}
		switch {
		case st.NullCount() == cc.NumValues() && !required:
			pages[0].same = allNull
		case st.HasMinMax() && st.NullCount() == 0 && bytes.Equal(st.EncodeMin(), st.EncodeMax()):
			pages[0].same, pages[0].value = allSame, bytes.Clone(st.EncodeMin())
			n += int64(len(pages[0].value))
		}
		return n, nil
	}
	nulls, mins, maxs, counts := ci.GetNullPages(), ci.GetMinValues(), ci.GetMaxValues(), ci.GetNullCounts()
	if len(nulls) != len(pages) || len(mins) != len(pages) || len(maxs) != len(pages) || counts != nil && len(counts) != len(pages) {
		return 0, nil // a column index that does not match: nothing known
	}
	for i := range pages {
		switch {
		case nulls[i] && !required:
			pages[i].same = allNull
		case !nulls[i] && bytes.Equal(mins[i], maxs[i]) && (required || counts != nil && counts[i] == 0):
			pages[i].same, pages[i].value = allSame, mins[i]
			n += int64(len(mins[i]))
		}
	}
	return n, nil
}

// pageSpans returns the pages of column col, placed at pages, with the
// bounds its column index gives them (pir nil: none), and the bytes the
// bounds take.
func pageSpans(pir *metadata.RowGroupPageIndexReader, pages []pageLoc, col int) ([]pageSpan, int64, error) {
	spans := make([]pageSpan, len(pages))
	for i, p := range pages {
		spans[i].first, spans[i].end = p.first, p.end
	}
	if pir == nil {
		return spans, 0, nil
	}
	ci, err := pir.GetColumnIndex(col)
	if err != nil || ci == nil {
		return spans, 0, err
	}
	nulls, mins, maxs := ci.GetNullPages(), ci.GetMinValues(), ci.GetMaxValues()
	if len(nulls) != len(spans) || len(mins) != len(spans) || len(maxs) != len(spans) {
		return spans, 0, nil // a page index that does not match: no bounds
	}
	var size int64
	for i := range spans {
		if nulls[i] {
			spans[i].empty = true
			continue
		}
		spans[i].min, spans[i].max, spans[i].bounded = mins[i], maxs[i], true
		size += int64(len(mins[i]) + len(maxs[i]))
	}
	return spans, size + int64(len(spans))*40, nil
}

// candidates returns the row ranges of the row group, of rows rows, whose
// pages of malo_id may hold malo and whose pages of from may hold a value
// in [lo, hi].
func (g *groupIndex) candidates(malo []byte, lo, hi int64, rows int64) []rowRange {
	var byMalo []rowRange
	for _, p := range g.malo {
		if p.empty || (p.bounded && (bytes.Compare(malo, p.min) < 0 || bytes.Compare(malo, p.max) > 0)) {
			continue
		}
		byMalo = appendRange(byMalo, rowRange{p.first, p.end})
	}
	var byFrom []rowRange
	for _, p := range g.from {
		if p.empty {
			continue
		}
		if p.bounded {
			mn, okMin := int64At(p.min)
			mx, okMax := int64At(p.max)
			if (okMax && mx < lo) || (okMin && mn > hi) {
				continue
			}
		}
		byFrom = appendRange(byFrom, rowRange{p.first, p.end})
	}
	if g.malo == nil {
		byMalo = []rowRange{{0, rows}}
	}
	if g.from == nil {
		byFrom = []rowRange{{0, rows}}
	}
	return intersect(byMalo, byFrom)
}

// A rowRange is rows [from, to) of a row group.
type rowRange struct{ from, to int64 }

// appendRange appends r to rs, sorted and disjoint, merging it with the
// last range it touches.
func appendRange(rs []rowRange, r rowRange) []rowRange {
	if n := len(rs); n > 0 && rs[n-1].to >= r.from {
		rs[n-1].to = max(rs[n-1].to, r.to)
		return rs
	}
	return append(rs, r)
}

// intersect returns the rows both a and b, sorted and disjoint, hold.
func intersect(a, b []rowRange) []rowRange {
	var out []rowRange
	for i, j := 0, 0; i < len(a) && j < len(b); {
		lo, hi := max(a[i].from, b[j].from), min(a[i].to, b[j].to)
		if lo < hi {
			out = appendRange(out, rowRange{lo, hi})
		}
		if a[i].to < b[j].to {
			i++
		} else {
			j++
		}
	}
	return out
}

package cold

import (
	"bytes"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// A groupIndex is what the page index of a row group says of the columns
// a typed read prunes by: per page of malo_id its rows and bounds, and
// per page of from its rows and bounds. A column without a page index has
// one page of the whole row group and no bounds.
type groupIndex struct {
	malo []pageSpan
	from []pageSpan
}

// A pageSpan is one page: rows [first, end) of the row group, and the
// encoded bounds of its values; bounded is false where they are unknown,
// empty where every value is null.
type pageSpan struct {
	first, end int64
	min, max   []byte
	bounded    bool
	empty      bool
}

// groupIndex returns the page index of row group g of the file of ft,
// reading it through pf the first time and keeping it with the footer.
func (r *SeriesReader) groupIndex(key footerKey, ft *footer, pf *file.Reader, g, malo, from int) (*groupIndex, error) {
	ft.mu.Lock()
	idx, ok := ft.groups[g]
	ft.mu.Unlock()
	if ok {
		return idx, nil
	}
	rows := ft.meta.RowGroup(g).NumRows()
	idx = &groupIndex{}
	var n int64
	var rg *metadata.RowGroupPageIndexReader
	if pir := pf.GetPageIndexReader(); pir != nil {
		var err error
		if rg, err = pir.RowGroup(g); err != nil {
			return nil, err
		}
	}
	for _, c := range []struct {
		col  int
		into *[]pageSpan
	}{{malo, &idx.malo}, {from, &idx.from}} {
		spans, size, err := pageSpans(rg, c.col, rows)
		if err != nil {
			return nil, err
		}
		*c.into, n = spans, n+size
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

// pageSpans returns the pages of column col of a row group of rows rows
// by its page index (rg nil: the row group has none), and the bytes
// their bounds take. A column without an offset index is one page.
func pageSpans(rg *metadata.RowGroupPageIndexReader, col int, rows int64) ([]pageSpan, int64, error) {
	whole := []pageSpan{{first: 0, end: rows}}
	if rg == nil {
		return whole, 0, nil
	}
	oi, err := rg.GetOffsetIndex(col)
	if err != nil || oi == nil {
		return whole, 0, err
	}
	locs := oi.GetPageLocations()
	if len(locs) == 0 {
		return whole, 0, nil
	}
	spans := make([]pageSpan, len(locs))
	for i, l := range locs {
		spans[i].first, spans[i].end = l.FirstRowIndex, rows
		if i > 0 {
			spans[i-1].end = l.FirstRowIndex
		}
	}
	size := int64(len(locs)) * 24
	ci, err := rg.GetColumnIndex(col)
	if err != nil || ci == nil {
		return spans, size, err
	}
	nulls, mins, maxs := ci.GetNullPages(), ci.GetMinValues(), ci.GetMaxValues()
	if len(nulls) != len(spans) || len(mins) != len(spans) || len(maxs) != len(spans) {
		return spans, size, nil // a page index that does not match: no bounds
	}
	for i := range spans {
		if nulls[i] {
			spans[i].empty = true
			continue
		}
		spans[i].min, spans[i].max, spans[i].bounded = mins[i], maxs[i], true
		size += int64(len(mins[i]) + len(maxs[i]))
	}
	return spans, size, nil
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

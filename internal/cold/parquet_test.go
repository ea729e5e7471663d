package cold

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/series"
)

// TestParquetLayout opens the data files an archival wrote and checks what
// the table properties promise: zstd on every column, a bloom filter on
// malo_id that knows the written ids and none on obis_code (constant in the
// file), a page index with the bounds of every data page, the configured row group size, and
// rows in key order, so that a market location's lookup reads one or two
// row groups by their statistics alone.
func TestParquetLayout(t *testing.T) {
	e := newEnv(t, Options{RowGroupRows: 1000})
	h := e.ensure(t, loadProfile("power"))
	var rows []series.Reading
	for i := range 30 {
		rows = append(rows, quarterHours(i, jan2026, 96)...)
	}
	e.archive(t, h, jan2026, feb2026, rows)

	files := e.files(t, ".parquet")
	if len(files) == 0 {
		t.Fatal("no data files")
	}
	for _, name := range files {
		t.Run(filepath.Base(name), func(t *testing.T) {
			rdr, err := file.OpenParquetFile(filepath.Join(e.dir, name), false)
			if err != nil {
				t.Fatal(err)
			}
			defer rdr.Close()
			md := rdr.MetaData()
			if md.NumRows != int64(len(rows)) || md.NumRowGroups() != (len(rows)+999)/1000 {
				t.Fatalf("%d rows in %d row groups, want %d rows in groups of at most 1000", md.NumRows, md.NumRowGroups(), len(rows))
			}
			bloomed := map[int]bool{}
			for _, c := range []string{"malo_id"} {
				bloomed[md.Schema.ColumnIndexByName(c)] = true
			}
			for g := range md.NumRowGroups() {
				rg := md.RowGroup(g)
				for c := range rg.NumColumns() {
					cc, err := rg.ColumnChunk(c)
					if err != nil {
						t.Fatal(err)
					}
					col := cc.PathInSchema().String()
					// numeric(18,6) fits INT64, which the writer hashes
					// without allocating (a 16-byte array otherwise).
					if col == "value" && cc.Type() != parquet.Types.Int64 {
						t.Errorf("row group %d, value stored as %s, want INT64", g, cc.Type())
					}
					if cc.Compression() != compress.Codecs.Zstd {
						t.Errorf("row group %d, %s: codec %v, want ZSTD", g, col, cc.Compression())
					}
					if has := cc.BloomFilterOffset() > 0; has != bloomed[c] {
						t.Errorf("row group %d, %s: bloom filter %v, want %v", g, col, has, bloomed[c])
					}
					if ok, err := cc.StatsSet(); !ok || err != nil {
						t.Errorf("row group %d, %s: no chunk statistics (%v)", g, col, err)
					}
					checkPageStatistics(t, rdr, g, c, col)
				}
			}
			for _, id := range []string{rows[0].MaLo, rows[len(rows)/2].MaLo, rows[len(rows)-1].MaLo} {
				if n := rowGroupsHolding(t, md, id); n < 1 || n > 2 {
					t.Errorf("%d of %d row groups may hold %s by their statistics, want 1 or 2", n, md.NumRowGroups(), id)
				}
			}
			bf, err := rdr.GetBloomFilterReader().RowGroup(0)
			if err != nil {
				t.Fatal(err)
			}
			idx := md.Schema.ColumnIndexByName("malo_id")
			filter, err := bf.GetColumnBloomFilter(idx)
			if err != nil || filter == nil {
				t.Fatalf("malo_id bloom filter: %v, %v", filter, err)
			}
			in := func(s string) bool {
				return filter.CheckHash(metadata.GetHash(filter.Hasher(), parquet.ByteArray(s)))
			}
			// 30 market locations: the smallest filter, not the maximum.
			if cc, _ := md.RowGroup(0).ColumnChunk(idx); cc.BloomFilterLength() > 2048+64 {
				t.Errorf("malo_id bloom filter of %d bytes for 30 market locations, want 2 KiB and its header (the maximum is %d)", cc.BloomFilterLength(), DefaultBloomBytes)
			}
			if !in(rows[0].MaLo) {
				t.Errorf("the bloom filter does not know %s, which the row group holds", rows[0].MaLo)
			}
			for i := 1000; i < 1010; i++ {
				if in(malo(i)) {
					t.Errorf("the bloom filter claims %s, which was never written", malo(i))
				}
			}
		})
	}
	t.Logf("%d data files", len(files))
}

// rowGroupsHolding returns the number of row groups of md whose malo_id
// statistics admit id: the ones a lookup of id must read.
func rowGroupsHolding(t *testing.T, md *metadata.FileMetaData, id string) int {
	t.Helper()
	col := md.Schema.ColumnIndexByName("malo_id")
	n := 0
	for g := range md.NumRowGroups() {
		cc, err := md.RowGroup(g).ColumnChunk(col)
		if err != nil {
			t.Fatal(err)
		}
		st, err := cc.Statistics()
		if err != nil || st == nil || !st.HasMinMax() {
			t.Fatalf("row group %d: no malo_id statistics (%v)", g, err)
		}
		bs := st.(*metadata.ByteArrayStatistics)
		if string(bs.Min()) <= id && id <= string(bs.Max()) {
			n++
		}
	}
	return n
}

// checkPageStatistics fails t unless every data page of column c in row
// group g carries min and max.
func checkPageStatistics(t *testing.T, rdr *file.Reader, g, c int, col string) {
	t.Helper()
	pr, err := rdr.RowGroup(g).GetColumnPageReader(c)
	if err != nil {
		t.Fatal(err)
	}
	pages := 0
	for pr.Next() {
		if _, ok := pr.Page().(file.DataPage); ok {
			pages++
		}
	}
	if err := pr.Err(); err != nil {
		t.Fatal(err)
	}
	if pages == 0 {
		t.Errorf("row group %d, %s: no data pages", g, col)
	}
	// The bounds of every page are in the page index, where a reader
	// finds them without reading the pages.
	pir := rdr.GetPageIndexReader()
	if pir == nil {
		t.Fatalf("row group %d, %s: no page index", g, col)
	}
	rg, err := pir.RowGroup(g)
	if err != nil || rg == nil {
		t.Fatalf("row group %d, %s: page index: %v", g, col, err)
	}
	ci, err := rg.GetColumnIndex(c)
	if err != nil || ci == nil {
		t.Fatalf("row group %d, %s: no column index (%v)", g, col, err)
	}
	oi, err := rg.GetOffsetIndex(c)
	if err != nil || oi == nil {
		t.Fatalf("row group %d, %s: no offset index (%v)", g, col, err)
	}
	if n := len(oi.GetPageLocations()); n != pages {
		t.Errorf("row group %d, %s: the offset index locates %d pages, the chunk has %d", g, col, n, pages)
	}
	mins, maxs, nulls := ci.GetMinValues(), ci.GetMaxValues(), ci.GetNullPages()
	if len(mins) != pages || len(maxs) != pages || len(nulls) != pages {
		t.Fatalf("row group %d, %s: column index of %d/%d/%d pages, the chunk has %d", g, col, len(mins), len(maxs), len(nulls), pages)
	}
	for i := range pages {
		if !nulls[i] && (len(mins[i]) == 0 || len(maxs[i]) == 0) {
			t.Errorf("row group %d, %s: page %d without bounds in the column index", g, col, i)
		}
	}
}

// TestSupersededPages checks that the files of superseded versions are
// written in smaller pages than the current ones: a page's values are held
// in memory until it is full, in every file open at once, and the
// superseded file holds a few percent of a window's rows.
func TestSupersededPages(t *testing.T) {
	e := newEnv(t, Options{})
	h := e.ensure(t, loadProfile("power"))
	// Pages of 1 MiB, so that the current file's value column is one page.
	ice, err := e.foreign.LoadTable(t.Context(), h.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	tx := ice.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{table.ParquetPageSizeBytesKey: "1048576"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Two versions of every quarter hour: as many superseded rows as
	// current ones, more than the largest write batch several times over.
	var rows []series.Reading
	for i := range 25 {
		for _, r := range quarterHours(i, jan2026, 31*96) {
			fix := r
			fix.Version += 100
			fix.Value++
			rows = append(rows, r, fix)
		}
	}
	e.archive(t, h, jan2026, feb2026, rows)

	pages := map[bool]int{} // superseded -> data pages of value
	for _, name := range e.files(t, ".parquet") {
		rdr, err := file.OpenParquetFile(filepath.Join(e.dir, name), false)
		if err != nil {
			t.Fatal(err)
		}
		superseded := strings.Contains(name, "superseded=true")
		c := rdr.MetaData().Schema.ColumnIndexByName("value")
		for g := range rdr.NumRowGroups() {
			rg, err := rdr.GetPageIndexReader().RowGroup(g)
			if err != nil {
				t.Fatal(err)
			}
			oi, err := rg.GetOffsetIndex(c)
			if err != nil {
				t.Fatal(err)
			}
			pages[superseded] += len(oi.GetPageLocations())
		}
		rdr.Close()
	}
	// 74,400 values of 8 bytes: one page of 1 MiB, or a page per write
	// batch of 20,000 values at an eighth of it.
	if pages[false] != 1 || pages[true] < 4 {
		t.Errorf("value column: %d pages in the current file, %d in the superseded one; want 1 and at least 4", pages[false], pages[true])
	}
}

package cold

import (
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/meterstore/meterstore/series"
)

// TestParquetLayout opens the data files an archival wrote and checks what
// the table properties promise: zstd on every column, bloom filters on
// malo_id and obis_code that know the written ids, statistics on every data
// page, and the configured row group size.
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
			for _, c := range []string{"malo_id", "obis_code"} {
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
		dp, ok := pr.Page().(file.DataPage)
		if !ok {
			continue // the dictionary page
		}
		pages++
		if s := dp.Statistics(); !s.HasNullCount || (dp.NumValues() > int32(s.NullCount) && (!s.HasMin || !s.HasMax)) {
			t.Errorf("row group %d, %s: data page %d without statistics: %+v", g, col, pages, s)
		}
	}
	if err := pr.Err(); err != nil {
		t.Fatal(err)
	}
	if pages == 0 {
		t.Errorf("row group %d, %s: no data pages", g, col)
	}
}

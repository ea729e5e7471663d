package cold

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// fileProperties are how the Tier writes a table's Parquet files: the
// table's write.* properties where it has them, iceberg-go's defaults where
// it does not, and choices of the Tier's own:
//   - a page index for every column, so that a reader skips the pages of a
//     row group whose bounds exclude a market location;
//   - bloom filters sized to the distinct values a file holds (adaptive),
//     not allocated whole at the maximum size: a file of a few meters gets
//     a filter of a few bytes;
//   - the dictionary dropped where it costs more than it saves, as
//     Iceberg's Java writer does;
//   - no Arrow schema in the footer: an Iceberg reader takes the types
//     from the table's schema by field id, so it bought nothing in every
//     file;
//   - decimals of up to 18 digits (value) stored as INT64, as the Iceberg
//     spec allows: the same bytes, and the writer hashes an integer per
//     reading instead of a 16-byte array it allocates;
//   - data pages of 128 KiB where the table names no size, not arrow-go's
//     1 MiB: a dictionary-encoded column's page is cut by the size of the
//     values it holds, so at 1 MiB a page of timestamps held a whole day
//     of a thousand meters, and a typed read of one meter's day
//     decompressed all of it; 128 KiB cut the CPU of BenchmarkSeriesRead
//     by a quarter (daily files) to two fifths (compacted) for 5 to 6 %
//     more bytes a reading (page headers and page index entries);
//   - pages an eighth of the size in the files of superseded versions.
//     A column buffers a page's values until the page is full, in every
//     file open at once; a window's superseded versions, a few percent of
//     its rows, are written beside its current ones, and at the full page
//     size their buffers grew as large as those of the current file.
//
// malo_id keeps its dictionary although DELTA_BYTE_ARRAY stores it in a
// fifth of the bytes (0.006 B a reading against 0.028): DuckDB filters a
// dictionary-encoded column on the dictionary, and on the delta-encoded one
// bench query's point and month reads took two to three times as long.
type fileProperties struct {
	arrow         *arrow.Schema
	parquet       *parquet.WriterProperties
	superseded    *parquet.WriterProperties // for files of superseded versions
	arrowProps    pqarrow.ArrowWriterProperties
	rowGroupBytes int64
	targetSize    int64
}

// pageRowLimitKey is Iceberg's table property of a page's rows; the Tier
// hands it to arrow-go as its write batch.
const pageRowLimitKey = "write.parquet.page-row-limit"

// defaultPageBytes is a data page's size where the table names none.
const defaultPageBytes = 128 << 10

func newFileProperties(props iceberg.Properties, asc *arrow.Schema) (fileProperties, error) {
	var errs []error
	get := func(key string, def int64) int64 {
		n, err := intProperty(props, key, def)
		if err != nil {
			errs = append(errs, err)
		}
		return n
	}
	codec, err := compression(props.Get(table.ParquetCompressionKey, "zstd"))
	if err != nil {
		errs = append(errs, err)
	}
	version := parquet.DataPageV2
	if v := props.Get(table.ParquetPageVersionKey, "2"); v == "1" || v == "v1" {
		version = parquet.DataPageV1
	}
	wp := []parquet.WriterProperty{
		parquet.WithCompression(codec),
		parquet.WithCompressionLevel(int(get(table.ParquetCompressionLevelKey, -1))),
		parquet.WithMaxRowGroupLength(get(table.ParquetRowGroupLimitKey, 1<<20)),
		parquet.WithBatchSize(get(pageRowLimitKey, 20_000)),
		parquet.WithDictionaryPageSizeLimit(get("write.parquet.dict-size-bytes", 2<<20)),
		parquet.WithDataPageVersion(version),
		parquet.WithDictionaryDefault(true),
		parquet.WithStats(true),
		parquet.WithPageIndexEnabled(true),
		parquet.WithStoreDecimalAsInteger(true),
		parquet.WithMaxBloomFilterBytes(get(table.ParquetBloomFilterMaxBytesKey, 1<<20)),
	}
	for _, f := range asc.Fields() {
		// A flat schema: the column path is the field's name.
		wp = append(wp, parquet.WithDictionaryCostFallbackFor(f.Name, true))
	}
	// Candidates from the maximum size down to 2 KiB, halving: arrow-go
	// keeps the smallest that holds the distinct values at a false
	// positive rate of 1 %; 2 KiB, for 500 values, is its smallest.
	candidates := bits.Len64(uint64(max(get(table.ParquetBloomFilterMaxBytesKey, 1<<20)/2048, 1)))
	for key, v := range props {
		col, ok := strings.CutPrefix(key, table.ParquetBloomFilterColumnEnabledKeyPrefix+".")
		if !ok || !strings.EqualFold(v, "true") {
			continue
		}
		wp = append(wp, parquet.WithBloomFilterEnabledFor(col, true), parquet.WithAdaptiveBloomFilterEnabledFor(col, true),
			parquet.WithBloomFilterCandidatesFor(col, candidates))
	}
	pageSize := get(table.ParquetPageSizeBytesKey, defaultPageBytes)
	wp = slices.Clip(wp) // appended to twice below
	if len(errs) > 0 {
		return fileProperties{}, fmt.Errorf("write properties: %w", errs[0])
	}
	return fileProperties{
		arrow:         asc,
		parquet:       parquet.NewWriterProperties(append(wp, parquet.WithDataPageSize(pageSize))...),
		superseded:    parquet.NewWriterProperties(append(wp, parquet.WithDataPageSize(max(pageSize/8, 8<<10)))...),
		arrowProps:    pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(memory.DefaultAllocator)),
		rowGroupBytes: get(table.ParquetRowGroupSizeBytesKey, 128<<20),
		targetSize:    get(table.WriteTargetFileSizeBytesKey, 512<<20),
	}, nil
}

// compression returns the codec an Iceberg table property names.
func compression(name string) (compress.Compression, error) {
	switch strings.ToLower(name) {
	case "zstd":
		return compress.Codecs.Zstd, nil
	case "snappy":
		return compress.Codecs.Snappy, nil
	case "gzip":
		return compress.Codecs.Gzip, nil
	case "uncompressed":
		return compress.Codecs.Uncompressed, nil
	}
	return compress.Codecs.Uncompressed, fmt.Errorf("table property %s=%q: not a codec the Tier writes", table.ParquetCompressionKey, name)
}

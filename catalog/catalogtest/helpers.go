// Package catalogtest holds what the tests of the catalogs share: the
// log-backed catalog on each backend with tables to write to, and Run,
// the conformance suite every catalog MeterStore commits through passes.
package catalogtest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/blob"
	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/consensus"
	"github.com/meterstore/meterstore/consensus/bloblog"
	"github.com/meterstore/meterstore/consensus/postgres"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/internal/s3test"
)

// A Backend opens a log-backed catalog on a fresh warehouse with its log in one of the
// two places a deployment can put it.
type Backend struct {
	Name string
	Open func(t *testing.T) *catalog.Catalog
}

// Backends are the places a deployment can put the log: PostgreSQL, the
// warehouse on a file system, the warehouse on S3.
func Backends() []Backend {
	return []Backend{
		{"postgres", func(t *testing.T) *catalog.Catalog {
			return NewCatalog(t, FileWarehouse(t), PGLog(t))
		}},
		{"serverless", func(t *testing.T) *catalog.Catalog {
			wh := FileWarehouse(t)
			return NewCatalog(t, wh, BlobLog(t, wh.Bucket))
		}},
		{"serverless-s3", func(t *testing.T) *catalog.Catalog {
			wh, err := catalog.OpenWarehouse(t.Context(), s3test.URL(t, s3test.NewBucket(t)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { wh.Bucket.Close() })
			return NewCatalog(t, wh, BlobLog(t, wh.Bucket))
		}},
	}
}

// FileWarehouse opens a warehouse in a temporary directory.
func FileWarehouse(t *testing.T) catalog.Warehouse {
	wh, err := catalog.OpenWarehouse(t.Context(), "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wh.Bucket.Close() })
	return wh
}

// PGLog opens a log on a fresh database of the test PostgreSQL.
func PGLog(t *testing.T) consensus.Log {
	cfg, err := pgxpool.ParseConfig(pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	l, err := postgres.Open(t.Context(), cfg, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// BlobLog opens a log in bucket b.
func BlobLog(t *testing.T, b *blob.Bucket) consensus.Log {
	l, err := bloblog.New(b, "_log/")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// NewCatalog opens a catalog on wh and l with the namespace metering.
func NewCatalog(t *testing.T, wh catalog.Warehouse, l consensus.Log) *catalog.Catalog {
	c, err := catalog.New(catalog.Options{Warehouse: wh, Log: l})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CreateNamespace(t.Context(), table.Identifier{"metering"}, iceberg.Properties{"owner": "test"}); err != nil {
		t.Fatal(err)
	}
	return c
}

// Schema is the schema of CreateTable's tables.
var Schema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "malo_id", Type: iceberg.PrimitiveTypes.String, Required: true},
	iceberg.NestedField{ID: 2, Name: "from", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
	iceberg.NestedField{ID: 3, Name: "value", Type: iceberg.PrimitiveTypes.Float64, Required: true},
	iceberg.NestedField{ID: 4, Name: "writer", Type: iceberg.PrimitiveTypes.String, Required: true},
)

// CreateTable creates table metering.name, partitioned by the month of
// from.
func CreateTable(t *testing.T, c icecatalog.Catalog, name string, props iceberg.Properties) *table.Table {
	t.Helper()
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{
		SourceIDs: []int{2}, FieldID: 1000, Name: "from_month", Transform: iceberg.MonthTransform{},
	})
	tbl, err := c.CreateTable(t.Context(), table.Identifier{"metering", name}, Schema,
		icecatalog.WithPartitionSpec(&spec), icecatalog.WithProperties(props))
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// Rows builds an Arrow table of n readings by writer, one per quarter hour
// from start.
func Rows(t *testing.T, writer string, start time.Time, n int) arrow.Table {
	t.Helper()
	sc, err := table.SchemaToArrowSchema(Schema, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("5123869678%d", i%10))
		ts := start.Add(time.Duration(i) * 15 * time.Minute)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(ts.UnixMicro()))
		b.Field(2).(*array.Float64Builder).Append(float64(i) / 4)
		b.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("%s-%d", writer, i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
}

// AppendRows appends n rows by writer to tbl in one commit.
func AppendRows(t *testing.T, tbl *table.Table, writer string, n int, props iceberg.Properties) (*table.Table, error) {
	t.Helper()
	at := Rows(t, writer, time.Date(2026, 1, 30, 23, 0, 0, 0, time.UTC), n)
	defer at.Release()
	tx := tbl.NewTransaction()
	if err := tx.AppendTable(t.Context(), at, int64(n), props); err != nil {
		return nil, err
	}
	return tx.Commit(t.Context())
}

// Writers scans tbl and returns the writer column, sorted.
func Writers(t *testing.T, tbl *table.Table, opts ...table.ScanOption) []string {
	t.Helper()
	at, err := tbl.Scan(opts...).ToArrowTable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	var out []string
	col := at.Column(at.Schema().FieldIndices("writer")[0])
	for _, chunk := range col.Data().Chunks() {
		s := chunk.(*array.String)
		for i := range s.Len() {
			out = append(out, s.Value(i))
		}
	}
	slices.Sort(out)
	return out
}

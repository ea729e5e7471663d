package rest_test

import (
	"testing"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/catalog/catalogtest"
	"github.com/meterstore/meterstore/catalog/rest"
)

// TestConformance runs the catalog conformance suite over iceberg-go's
// REST catalog client behind catalog.Guard, talking to the writable
// handler of a log-backed catalog on 127.0.0.1. Rename is not served
// (501), so the suite checks that it changes nothing.
func TestConformance(t *testing.T) {
	pass := func(table.Identifier, table.Metadata, table.Metadata) error { return nil }
	catalogtest.Run(t, func(t *testing.T) icecatalog.Catalog {
		wh := catalogtest.FileWarehouse(t)
		c, err := catalog.New(catalog.Options{Warehouse: wh, Log: catalogtest.BlobLog(t, wh.Bucket)})
		if err != nil {
			t.Fatal(err)
		}
		rc, _ := restClient(t, rest.WritableHandler(c, nil, views))
		return catalog.Guard(rc, pass)
	}, catalogtest.Features{})
}

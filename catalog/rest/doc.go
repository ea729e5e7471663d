// Package rest serves an Iceberg catalog over the Iceberg REST
// catalog protocol: read-only with Handler, reads and writes with
// WritableHandler. It serves the log-backed catalog of package catalog
// (see Catalog), knows nothing of what the tables hold, and serves views
// only through the hook WithViews installs.
package rest

import (
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/meterstore/meterstore/catalog"
)

// Catalog is what the handlers serve: an iceberg-go catalog whose every
// method they call as an in-process caller would, with the warehouse its
// tables live in (for the storage properties readers need, and to keep a
// created table's location inside it). *catalog.Catalog is one.
type Catalog interface {
	icecatalog.Catalog
	Warehouse() catalog.Warehouse
}

var _ Catalog = (*catalog.Catalog)(nil)

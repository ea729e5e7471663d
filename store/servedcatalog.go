package store

import (
	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/internal/cold"
)

// ServedCatalog is what an Iceberg REST catalog server (package
// catalog/rest) mounts to serve a deployment to foreign engines: its
// catalog, and the views beside its tables.
type ServedCatalog struct {
	// Catalog is the deployment's own catalog, on its consensus log; nil
	// when the deployment commits through another catalog (catalog.type
	// rest or sql), which has a server of its own.
	Catalog *catalog.Catalog
	// Views are the readings views of the tables: beside each table T,
	// T_readings, T's readings with each merge key's winning version
	// only, so that a foreign engine does not rebuild the rule by hand.
	Views catalog.Views
}

// ServedCatalog returns what a REST catalog server mounts to serve the
// deployment. The store hands it out so that the server reaches the
// tiers through the front door alone.
func (s *Store) ServedCatalog() ServedCatalog {
	cat, _ := s.opts.Catalog.(*catalog.Catalog)
	return ServedCatalog{Catalog: cat, Views: cold.Views{}}
}

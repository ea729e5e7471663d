package catalog

import (
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"
)

// Views is the hook through which a REST catalog (package catalog/rest,
// its WithViews) serves views beside the tables: each the view of one
// table of the same namespace, derived on every load from that table's
// current metadata and stored nowhere, so that every server answers the
// same for the same table. What a view holds is the hook's; the catalog
// knows nothing of it. A view that does not exist is an error wrapping
// iceberg-go's catalog.ErrNoSuchView.
type Views interface {
	// ViewsOf returns the names of the views that table name could
	// offer, in order; whether it does is View's to say. A listing shows
	// the first that View derives: a table offers one view.
	ViewsOf(name string) []string
	// TableOf returns the name of the table whose view view of namespace
	// ns is, or an error wrapping catalog.ErrNoSuchView if view names no
	// view.
	TableOf(ns, view string) (string, error)
	// View derives view ident of table tbl from the table's current
	// metadata md, or returns an error wrapping catalog.ErrNoSuchView if
	// the table offers no view. catalog is the default catalog the server
	// gives the view's versions ("" for none), which the view's SQL may
	// name.
	View(ident, tbl table.Identifier, md table.Metadata, catalog string) (view.Metadata, error)
}

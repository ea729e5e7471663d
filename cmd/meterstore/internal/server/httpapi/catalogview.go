package httpapi

// The readings views of the catalog (cold.ReadingsViewTable) to a token
// limited to tables: the view of a table is that table's, so the token
// finds the views of its tables and no others.

import (
	"net/http"
	"slices"

	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/cold"
)

// viewAllowed reports whether t may read view, the readings view of one
// of its tables.
func viewAllowed(t config.Token, view string) bool {
	name, ok := cold.ReadingsViewTable(view)
	return ok && slices.Contains(t.Tables, name)
}

// loadView hands a request for view to the catalog if t may read it, and
// answers 404 as though it did not exist otherwise.
func (c *catalogAPI) loadView(w http.ResponseWriter, r *http.Request, t config.Token, view string) {
	if !viewAllowed(t, view) {
		catalogError(w, http.StatusNotFound, "NoSuchViewException", "no such view: "+view)
		return
	}
	c.inner.ServeHTTP(w, r)
}

// listViews answers the view listing with the views t may read.
func (c *catalogAPI) listViews(w http.ResponseWriter, r *http.Request, t config.Token) {
	c.filterListing(w, r, "view", func(name string) bool { return viewAllowed(t, name) })
}

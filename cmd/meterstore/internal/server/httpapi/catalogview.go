package httpapi

// The readings views of the catalog (store.ServedCatalog) to a token
// limited to tables: the view of a table is that table's, so the token
// finds the views of its tables and no others.

import (
	"net/http"
	"slices"

	"github.com/meterstore/meterstore/config"
)

// viewAllowed reports whether t may read view of namespace ns, the
// readings view of one of its tables.
func (c *catalogAPI) viewAllowed(t config.Token, ns, view string) bool {
	if c.h.views == nil {
		return false
	}
	name, err := c.h.views.TableOf(ns, view)
	return err == nil && slices.Contains(t.Tables, name)
}

// loadView hands a request for view of namespace ns to the catalog if t
// may read it, and answers 404 as though it did not exist otherwise.
func (c *catalogAPI) loadView(w http.ResponseWriter, r *http.Request, t config.Token, ns, view string) {
	if !c.viewAllowed(t, ns, view) {
		catalogError(w, http.StatusNotFound, "NoSuchViewException", "no such view: "+view)
		return
	}
	c.inner.ServeHTTP(w, r)
}

// listViews answers the view listing of namespace ns with the views t may
// read.
func (c *catalogAPI) listViews(w http.ResponseWriter, r *http.Request, t config.Token, ns string) {
	c.filterListing(w, r, "view", func(name string) bool { return c.viewAllowed(t, ns, name) })
}

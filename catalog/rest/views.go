package rest

// Views beside the tables, through a hook: each view is derived on every
// load from one table's current metadata and stored nowhere, so every
// serve process answers the same for the same table. What a view holds is
// the hook's (Views); the handler serves it under the protocol's view
// routes, read-only.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// Views provides the views a handler serves (WithViews), each the view of
// one table of the same namespace.
type Views interface {
	// ViewOf returns the name of the view that table name would offer.
	// Whether it does is View's to say.
	ViewOf(name string) string
	// TableOf returns the name of the table whose view view of namespace
	// ns is, or an error wrapping ErrNoSuchView if view names no view.
	TableOf(ns, view string) (string, error)
	// View derives view ident of table tbl from the table's current
	// metadata md, or returns an error wrapping ErrNoSuchView if the
	// table offers no view. catalog is the default catalog the handler
	// sets on the version (ViewCatalog; "" for none), which the view's SQL
	// may name.
	View(ident, tbl table.Identifier, md table.Metadata, catalog string) (ViewMetadata, error)
}

// ErrNoSuchView reports a view that does not exist: a name that is no
// view, a table that is missing or offers none, or a table of the view's
// own name, which would hide it.
var ErrNoSuchView = errors.New("no such view")

// ViewMetadata is the view metadata of the Iceberg view spec, version 1.
type ViewMetadata struct {
	ViewUUID         string            `json:"view-uuid"`
	FormatVersion    int               `json:"format-version"`
	Location         string            `json:"location"`
	CurrentVersionID int               `json:"current-version-id"`
	Versions         []ViewVersion     `json:"versions"`
	VersionLog       []ViewLogEntry    `json:"version-log"`
	Schemas          []*iceberg.Schema `json:"schemas"`
	Properties       map[string]string `json:"properties"`
}

// ViewVersion is one version of a view.
type ViewVersion struct {
	VersionID        int                  `json:"version-id"`
	TimestampMs      int64                `json:"timestamp-ms"`
	SchemaID         int                  `json:"schema-id"`
	Summary          map[string]string    `json:"summary"`
	Representations  []ViewRepresentation `json:"representations"`
	DefaultNamespace []string             `json:"default-namespace"`
	DefaultCatalog   string               `json:"default-catalog,omitempty"`
}

// ViewRepresentation is a view version's query in one SQL dialect.
type ViewRepresentation struct {
	Type    string `json:"type"`
	SQL     string `json:"sql"`
	Dialect string `json:"dialect"`
}

// ViewLogEntry is an entry of a view's version log.
type ViewLogEntry struct {
	VersionID   int   `json:"version-id"`
	TimestampMs int64 `json:"timestamp-ms"`
}

// loadView returns the location and metadata of view ident, or an error
// wrapping ErrNoSuchView. The location is a file name under the table's
// metadata directory that changes whenever the view's metadata does. No
// file is there; the protocol requires a location, and the REST clients
// take the metadata from the response.
func (s *restServer) loadView(ctx context.Context, ident table.Identifier) (string, ViewMetadata, error) {
	// Engines load a table before a view of the same name: a table
	// called so hides the view, which is therefore not served.
	shadow, err := s.c.CheckTableExists(ctx, ident)
	if errors.Is(err, icecatalog.ErrInvalidIdentifier) {
		return "", ViewMetadata{}, fmt.Errorf("%w: %w", ErrNoSuchView, err)
	}
	if s.views == nil || len(ident) != 2 {
		return "", ViewMetadata{}, fmt.Errorf("%w: %s", ErrNoSuchView, strings.Join(ident, "."))
	}
	ns, view := ident[0], ident[1]
	name, terr := s.views.TableOf(ns, view)
	switch {
	case terr != nil:
		return "", ViewMetadata{}, terr
	case err != nil:
		return "", ViewMetadata{}, err
	case shadow:
		return "", ViewMetadata{}, fmt.Errorf("%w: %s.%s is a table", ErrNoSuchView, ns, view)
	}
	tident := table.Identifier{ns, name}
	t, err := s.c.LoadTable(ctx, tident)
	if errors.Is(err, icecatalog.ErrNoSuchTable) || errors.Is(err, icecatalog.ErrInvalidIdentifier) {
		return "", ViewMetadata{}, fmt.Errorf("%w: %w", ErrNoSuchView, err)
	}
	if err != nil {
		return "", ViewMetadata{}, err
	}
	md := t.Metadata()
	vm, err := s.views.View(ident, tident, md, s.viewCatalog)
	if err != nil {
		return "", ViewMetadata{}, err
	}
	for i := range vm.Versions {
		vm.Versions[i].DefaultCatalog = s.viewCatalog
	}
	raw, err := json.Marshal(vm)
	if err != nil {
		return "", ViewMetadata{}, fmt.Errorf("catalog: encode view %s.%s: %w", ns, view, err)
	}
	sum := sha256.Sum256(raw)
	loc := strings.TrimRight(md.Location(), "/") + "/metadata/view-" + view + "-" + hex.EncodeToString(sum[:8]) + ".metadata.json"
	return loc, vm, nil
}

// listViews answers the protocol's ListTablesResponse with the views of
// the namespace's tables. A table whose metadata cannot be read is left
// out and logged, so that one broken table does not hide the others'
// views.
func (s *restServer) listViews(w http.ResponseWriter, r *http.Request) {
	s.list(w, r, func(id table.Identifier) (table.Identifier, bool) {
		if s.views == nil {
			return nil, false
		}
		vid := table.Identifier{id[0], s.views.ViewOf(id[1])}
		if _, _, err := s.loadView(r.Context(), vid); err != nil {
			if !errors.Is(err, ErrNoSuchView) {
				s.logger.Warn("catalog: view left out of the listing", "view", strings.Join(vid, "."), "err", err)
			}
			return nil, false
		}
		return vid, true
	})
}

// getView answers the protocol's LoadViewResult. A view missing for any
// reason, a namespace missing too, is NoSuchViewException, as a missing
// table is NoSuchTableException on its route (see errStatus).
func (s *restServer) getView(w http.ResponseWriter, r *http.Request) {
	loc, vm, err := s.loadView(r.Context(), viewOf(r))
	if err != nil {
		s.failView(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"metadata-location": loc,
		"metadata":          vm,
		"config":            map[string]string{},
	})
}

func (s *restServer) viewExists(w http.ResponseWriter, r *http.Request) {
	_, _, err := s.loadView(r.Context(), viewOf(r))
	switch {
	case errors.Is(err, ErrNoSuchView):
		w.WriteHeader(http.StatusNotFound)
	case err != nil:
		s.logger.Warn("catalog: REST request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		w.WriteHeader(http.StatusInternalServerError)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *restServer) failView(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, ErrNoSuchView) {
		writeJSON(w, http.StatusNotFound, errorBody(err.Error(), "NoSuchViewException", http.StatusNotFound))
		return
	}
	s.fail(w, r, err, readRoute)
}

func viewOf(r *http.Request) table.Identifier {
	return append(namespaceOf(r), r.PathValue("view"))
}

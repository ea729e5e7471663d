package rest

// Views beside the tables, through a hook (catalog.Views): each view is
// derived on every load from one table's current metadata and stored
// nowhere, so every serve process answers the same for the same table.
// What a view holds is the hook's; the handler serves it, in iceberg-go's
// view model, under the protocol's view routes, read-only.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"
)

// loadView returns the location and metadata of view ident, or an error
// wrapping catalog.ErrNoSuchView. The location is a file name under the table's
// metadata directory that changes whenever the view's metadata does. No
// file is there; the protocol requires a location, and the REST clients
// take the metadata from the response.
func (s *restServer) loadView(ctx context.Context, ident table.Identifier) (string, view.Metadata, error) {
	// Engines load a table before a view of the same name: a table
	// called so hides the view, which is therefore not served.
	shadow, err := s.c.CheckTableExists(ctx, ident)
	if errors.Is(err, icecatalog.ErrInvalidIdentifier) {
		return "", nil, fmt.Errorf("%w: %w", icecatalog.ErrNoSuchView, err)
	}
	if s.views == nil || len(ident) != 2 {
		return "", nil, fmt.Errorf("%w: %s", icecatalog.ErrNoSuchView, strings.Join(ident, "."))
	}
	ns, vname := ident[0], ident[1]
	name, terr := s.views.TableOf(ns, vname)
	switch {
	case terr != nil:
		return "", nil, terr
	case err != nil:
		return "", nil, err
	case shadow:
		return "", nil, fmt.Errorf("%w: %s.%s is a table", icecatalog.ErrNoSuchView, ns, vname)
	}
	tident := table.Identifier{ns, name}
	t, err := s.c.LoadTable(ctx, tident)
	if errors.Is(err, icecatalog.ErrNoSuchTable) || errors.Is(err, icecatalog.ErrInvalidIdentifier) {
		return "", nil, fmt.Errorf("%w: %w", icecatalog.ErrNoSuchView, err)
	}
	if err != nil {
		return "", nil, err
	}
	md := t.Metadata()
	vm, err := s.views.View(ident, tident, md, s.viewCatalog)
	if err != nil {
		return "", nil, err
	}
	if vm, err = withDefaultCatalog(vm, s.viewCatalog); err != nil {
		return "", nil, fmt.Errorf("catalog: view %s.%s: %w", ns, vname, err)
	}
	raw, err := json.Marshal(vm)
	if err != nil {
		return "", nil, fmt.Errorf("catalog: encode view %s.%s: %w", ns, vname, err)
	}
	sum := sha256.Sum256(raw)
	loc := strings.TrimRight(md.Location(), "/") + "/metadata/view-" + vname + "-" + hex.EncodeToString(sum[:8]) + ".metadata.json"
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
		for _, name := range s.views.ViewsOf(id[1]) {
			vid := table.Identifier{id[0], name}
			_, _, err := s.loadView(r.Context(), vid)
			if err == nil {
				return vid, true
			}
			if !errors.Is(err, icecatalog.ErrNoSuchView) {
				s.logger.Warn("catalog: view left out of the listing", "view", strings.Join(vid, "."), "err", err)
				return nil, false
			}
		}
		return nil, false
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
	case errors.Is(err, icecatalog.ErrNoSuchView):
		w.WriteHeader(http.StatusNotFound)
	case err != nil:
		s.logger.Warn("catalog: REST request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		w.WriteHeader(http.StatusInternalServerError)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *restServer) failView(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, icecatalog.ErrNoSuchView) {
		writeJSON(w, http.StatusNotFound, errorBody(err.Error(), "NoSuchViewException", http.StatusNotFound))
		return
	}
	s.fail(w, r, err, readRoute)
}

func viewOf(r *http.Request) table.Identifier {
	return append(namespaceOf(r), r.PathValue("view"))
}

// withDefaultCatalog returns vm with name as every version's default
// catalog ("" for none), which the handler sets whatever the hook did.
// iceberg-go's view metadata cannot be changed in place, so a view whose
// versions name another is decoded anew from its JSON with the versions
// replaced: nothing else of it changes.
func withDefaultCatalog(vm view.Metadata, name string) (view.Metadata, error) {
	versions := vm.Versions() // copies
	if !slices.ContainsFunc(versions, func(v *view.Version) bool { return v.DefaultCatalog != name }) {
		return vm, nil
	}
	for _, v := range versions {
		v.DefaultCatalog = name
	}
	raw, err := json.Marshal(vm)
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	if fields["versions"], err = json.Marshal(versions); err != nil {
		return nil, err
	}
	if raw, err = json.Marshal(fields); err != nil {
		return nil, err
	}
	return view.ParseMetadataBytes(raw)
}

package catalog

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

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/meterstore/meterstore/internal/resolve"
)

// The REST handler serves, beside each table T that MeterStore's cold tier
// wrote, a read-only Iceberg view T_readings (view spec v1): T's readings
// with each merge key's winning version only, the rule of MeterStore's
// readings relation, so that a foreign engine does not rebuild it by hand.
// The view is derived on every load from T's current metadata and stored
// nowhere: its SQL names T, its schema is T's schema without the
// superseded column, and nothing in it but T's metadata decides it, so
// every serve process answers the same for the same table.
//
// Its SQL (dialects spark, trino and duckdb) uses the marks of the
// superseded column as the archival set them: a row marked false wins
// unless a row not marked (a late correction, or a file older than the
// column) has its merge key; those merge keys are resolved by the rule,
// highest version, then latest recorded_at; a row marked true never wins.
// A table without the column is resolved by the rule alone.

// ReadingsViewSuffix ends the name of the readings view of a table.
const ReadingsViewSuffix = "_readings"

// ReadingsViewTable returns the name of the table whose readings view is
// view, and false if view names no readings view.
func ReadingsViewTable(view string) (string, bool) {
	t, ok := strings.CutSuffix(view, ReadingsViewSuffix)
	return t, ok && t != ""
}

// Names the cold tier gives its tables' properties, columns and summary
// keys (internal/cold, series). They are spelt out here because the cold
// tier imports this package; a test holds them equal.
const (
	mergeKeyProperty = "meterstore.merge-key"
	watermarkSummary = "meterstore.watermark"
	supersededColumn = "superseded"
)

// errNoSuchView reports a view that does not exist: a name that is no
// readings view, a table that is missing or not one of the cold tier's,
// or a table of the view's own name, which would hide it.
var errNoSuchView = errors.New("no such view")

// viewMetadata is the view metadata of the Iceberg view spec, version 1.
type viewMetadata struct {
	ViewUUID         string            `json:"view-uuid"`
	FormatVersion    int               `json:"format-version"`
	Location         string            `json:"location"`
	CurrentVersionID int               `json:"current-version-id"`
	Versions         []viewVersion     `json:"versions"`
	VersionLog       []viewLogEntry    `json:"version-log"`
	Schemas          []*iceberg.Schema `json:"schemas"`
	Properties       map[string]string `json:"properties"`
}

type viewVersion struct {
	VersionID        int                  `json:"version-id"`
	TimestampMs      int64                `json:"timestamp-ms"`
	SchemaID         int                  `json:"schema-id"`
	Summary          map[string]string    `json:"summary"`
	Representations  []viewRepresentation `json:"representations"`
	DefaultNamespace []string             `json:"default-namespace"`
	DefaultCatalog   string               `json:"default-catalog,omitempty"`
}

type viewRepresentation struct {
	Type    string `json:"type"`
	SQL     string `json:"sql"`
	Dialect string `json:"dialect"`
}

type viewLogEntry struct {
	VersionID   int   `json:"version-id"`
	TimestampMs int64 `json:"timestamp-ms"`
}

// readingsView derives the readings view of table ident from its metadata
// md, and a location for it: a file name under the table's metadata
// directory that changes whenever the view's metadata does. No file is
// there; the protocol requires a location, and the REST clients take the
// metadata from the response. It returns errNoSuchView if the table is not
// one the cold tier wrote (it has no merge key property naming columns of
// its schema).
//
// The view has one version. Its id follows the table's current schema
// (schema id + 1), so that it changes when the columns do; its time is
// the table's last update; its properties carry the watermark of the
// table's current snapshot, W: the view's rows are the readings below it.
// Its default namespace is the table's, and its default catalog is
// viewCatalog unless that is empty (see ViewCatalog).
func readingsView(ident table.Identifier, md table.Metadata, viewCatalog string) (string, viewMetadata, error) {
	ns, name := ident[0], ident[1]
	sc := md.CurrentSchema()
	props := md.Properties()
	key := strings.Split(props[mergeKeyProperty], ",")
	if props[mergeKeyProperty] == "" {
		return "", viewMetadata{}, fmt.Errorf("%w: %s.%s has no property %s", errNoSuchView, ns, name, mergeKeyProperty)
	}
	for _, c := range append(slices.Clone(key), "version", "recorded_at") {
		if _, ok := sc.FindFieldByName(c); !ok {
			return "", viewMetadata{}, fmt.Errorf("%w: %s.%s has no column %q", errNoSuchView, ns, name, c)
		}
	}
	var (
		fields []iceberg.NestedField
		cols   []string
	)
	marked := false
	for _, f := range sc.Fields() {
		if f.Name == supersededColumn {
			marked = true
			continue
		}
		fields = append(fields, f)
		cols = append(cols, f.Name)
	}
	viewSchema := iceberg.NewSchema(0, fields...)

	var reps []viewRepresentation
	for _, d := range resolve.ViewDialects {
		reps = append(reps, viewRepresentation{Type: "sql", Dialect: d.Name,
			SQL: resolve.SQL(d, d.Table(ns, name), cols, key, marked)})
	}
	version := sc.ID + 1
	ts := md.LastUpdatedMillis()
	viewName := name + ReadingsViewSuffix
	vprops := map[string]string{
		"comment": fmt.Sprintf("MeterStore's readings of %s.%s: the winning version of each merge key (%s); "+
			"the rows below the watermark meterstore.watermark of the table's current snapshot", ns, name, strings.Join(key, ", ")),
		"meterstore.table":  ns + "." + name,
		mergeKeyProperty:    strings.Join(key, ","),
		"meterstore.marked": fmt.Sprint(marked),
	}
	if s := md.CurrentSnapshot(); s != nil && s.Summary != nil {
		if w, ok := s.Summary.Properties[watermarkSummary]; ok {
			vprops[watermarkSummary] = w
		}
	}
	vm := viewMetadata{
		ViewUUID:         uuid.NewSHA1(md.TableUUID(), []byte(viewName)).String(),
		FormatVersion:    1,
		Location:         md.Location(),
		CurrentVersionID: version,
		Versions: []viewVersion{{
			VersionID:        version,
			TimestampMs:      ts,
			SchemaID:         viewSchema.ID,
			Summary:          map[string]string{"engine-name": "meterstore"},
			Representations:  reps,
			DefaultNamespace: []string{ns},
			DefaultCatalog:   viewCatalog,
		}},
		VersionLog: []viewLogEntry{{VersionID: version, TimestampMs: ts}},
		Schemas:    []*iceberg.Schema{viewSchema},
		Properties: vprops,
	}
	raw, err := json.Marshal(vm)
	if err != nil {
		return "", viewMetadata{}, fmt.Errorf("catalog: encode view %s.%s: %w", ns, viewName, err)
	}
	sum := sha256.Sum256(raw)
	loc := strings.TrimRight(md.Location(), "/") + "/metadata/view-" + viewName + "-" + hex.EncodeToString(sum[:8]) + ".metadata.json"
	return loc, vm, nil
}

// loadReadingsView returns the location and metadata of view ident, or an
// error wrapping errNoSuchView.
func (s *restServer) loadReadingsView(ctx context.Context, ident table.Identifier) (string, viewMetadata, error) {
	ns, view, err := split(ident)
	if err != nil {
		return "", viewMetadata{}, fmt.Errorf("%w: %w", errNoSuchView, err)
	}
	name, ok := ReadingsViewTable(view)
	if !ok {
		return "", viewMetadata{}, fmt.Errorf("%w: %s.%s is no readings view (its name ends in %s)", errNoSuchView, ns, view, ReadingsViewSuffix)
	}
	// Engines load a table before a view of the same name: a table
	// called so hides the view, which is therefore not served.
	if shadow, err := s.c.CheckTableExists(ctx, ident); err != nil {
		return "", viewMetadata{}, err
	} else if shadow {
		return "", viewMetadata{}, fmt.Errorf("%w: %s.%s is a table", errNoSuchView, ns, view)
	}
	tident := table.Identifier{ns, name}
	h, err := s.c.current(ctx, tident)
	if errors.Is(err, icecatalog.ErrNoSuchTable) || errors.Is(err, icecatalog.ErrInvalidIdentifier) {
		return "", viewMetadata{}, fmt.Errorf("%w: %w", errNoSuchView, err)
	}
	if err != nil {
		return "", viewMetadata{}, err
	}
	t, err := s.c.open(ctx, tident, h.MetadataLocation)
	if err != nil {
		return "", viewMetadata{}, err
	}
	return readingsView(tident, t.Metadata(), s.viewCatalog)
}

// listViews answers the protocol's ListTablesResponse with the readings
// views of the namespace's tables. A table whose metadata cannot be read
// is left out and logged, so that one broken table does not hide the
// others' views.
func (s *restServer) listViews(w http.ResponseWriter, r *http.Request) {
	type ident struct {
		Namespace []string `json:"namespace"`
		Name      string   `json:"name"`
	}
	ids := []ident{}
	for id, err := range s.c.ListTables(r.Context(), namespaceOf(r)) {
		if err != nil {
			s.fail(w, r, err, readRoute)
			return
		}
		vid := table.Identifier{id[0], id[1] + ReadingsViewSuffix}
		if _, _, err := s.loadReadingsView(r.Context(), vid); err != nil {
			if !errors.Is(err, errNoSuchView) {
				s.c.logger.Warn("catalog: readings view left out of the listing", "view", strings.Join(vid, "."), "err", err)
			}
			continue
		}
		ids = append(ids, ident{Namespace: vid[:1], Name: vid[1]})
	}
	writeJSON(w, http.StatusOK, map[string]any{"identifiers": ids})
}

// loadView answers the protocol's LoadViewResult. A view missing for any
// reason, a namespace missing too, is NoSuchViewException, as a missing
// table is NoSuchTableException on its route (see errStatus).
func (s *restServer) loadView(w http.ResponseWriter, r *http.Request) {
	loc, vm, err := s.loadReadingsView(r.Context(), viewOf(r))
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
	_, _, err := s.loadReadingsView(r.Context(), viewOf(r))
	switch {
	case errors.Is(err, errNoSuchView):
		w.WriteHeader(http.StatusNotFound)
	case err != nil:
		s.c.logger.Warn("catalog: REST request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		w.WriteHeader(http.StatusInternalServerError)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *restServer) failView(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, errNoSuchView) {
		writeJSON(w, http.StatusNotFound, errorBody(err.Error(), "NoSuchViewException", http.StatusNotFound))
		return
	}
	s.fail(w, r, err, readRoute)
}

func viewOf(r *http.Request) table.Identifier {
	return append(namespaceOf(r), r.PathValue("view"))
}

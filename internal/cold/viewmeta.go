package cold

import (
	"fmt"
	"maps"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"
	"github.com/google/uuid"
	"github.com/meterstore/meterstore/internal/resolve"
)

// A viewSpec is what tells the views the catalog derives apart: the rest
// of their metadata follows from the table's, so that every serve process
// answers the same for the same table.
type viewSpec struct {
	what   string                // names the view in errors: "readings view"
	fields []iceberg.NestedField // the view's schema
	// sql returns the view's SQL in dialect d over relation, the table's
	// name in d (resolve.Dialect.Table).
	sql   func(d resolve.Dialect, relation string) string
	props iceberg.Properties
	// summary are the keys of the table's current snapshot summary the
	// view's properties carry too, where the summary has them.
	summary []string
}

// derivedView returns the metadata of view ident over table tbl of
// metadata md, with default catalog catalog: one version, whose id
// follows the table's current schema (schema id + 1, so that it changes
// when the columns do), whose time is the table's last update and whose
// default namespace is the table's; its SQL is s.sql in each of
// resolve.ViewDialects. Its UUID derives from the table's and the view's
// name.
func derivedView(s viewSpec, ident, tbl table.Identifier, md table.Metadata, catalog string) (view.Metadata, error) {
	ns, name := tbl[0], tbl[1]
	sc := md.CurrentSchema()
	viewSchema := iceberg.NewSchema(0, s.fields...)
	var reps []view.Representation
	for _, d := range resolve.ViewDialects {
		reps = append(reps, view.NewRepresentation(s.sql(d, d.Table(catalog, ns, name)), d.Name))
	}
	props := maps.Clone(s.props)
	if props == nil {
		props = iceberg.Properties{}
	}
	if snap := md.CurrentSnapshot(); snap != nil && snap.Summary != nil {
		for _, k := range s.summary {
			if v, ok := snap.Summary.Properties[k]; ok {
				props[k] = v
			}
		}
	}
	version, err := view.NewVersion(int64(sc.ID+1), viewSchema.ID, reps, table.Identifier{ns},
		view.WithTimestampMS(md.LastUpdatedMillis()),
		view.WithVersionSummary(view.VersionSummary{"engine-name": "meterstore"}),
		view.WithDefaultViewCatalog(catalog))
	if err != nil {
		return nil, fmt.Errorf("cold: the %s of %s.%s: %w", s.what, ns, name, err)
	}
	b, err := view.NewMetadataBuilder()
	if err != nil {
		return nil, fmt.Errorf("cold: the %s of %s.%s: %w", s.what, ns, name, err)
	}
	built, err := b.SetUUID(uuid.NewSHA1(md.TableUUID(), []byte(ident[1]))).
		SetLoc(md.Location()).
		SetProperties(props).
		SetCurrentVersion(version, viewSchema).
		Build()
	if err != nil {
		return nil, fmt.Errorf("cold: the %s of %s.%s: %w", s.what, ns, name, err)
	}
	return built.Metadata, nil
}

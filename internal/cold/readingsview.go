package cold

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"
	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/internal/resolve"
	"github.com/meterstore/meterstore/series"
)

// The REST catalog serves, through ReadingsViews, beside each table T the
// cold tier wrote, a read-only Iceberg view T_readings (view spec v1): T's readings
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

// ReadingsViews is the catalog.Views of the cold tier's tables: the
// readings view of each, in iceberg-go's view model (a REST catalog
// serves it through its hook, catalog/rest's WithViews).
type ReadingsViews struct{}

var _ catalog.Views = ReadingsViews{}

// ReadingsViewSuffix ends the name of the readings view of a table.
const ReadingsViewSuffix = "_readings"

// ReadingsViewTable returns the name of the table whose readings view is
// view, and false if view names no readings view.
func ReadingsViewTable(view string) (string, bool) {
	t, ok := strings.CutSuffix(view, ReadingsViewSuffix)
	return t, ok && t != ""
}

// ViewsOf implements catalog.Views: the readings view of table name.
func (ReadingsViews) ViewsOf(name string) []string { return []string{name + ReadingsViewSuffix} }

// TableOf implements catalog.Views.
func (ReadingsViews) TableOf(ns, view string) (string, error) {
	name, ok := ReadingsViewTable(view)
	if !ok {
		return "", fmt.Errorf("%w: %s.%s is no readings view (its name ends in %s)", icecatalog.ErrNoSuchView, ns, view, ReadingsViewSuffix)
	}
	return name, nil
}

// View implements catalog.Views: the readings view of table tbl,
// derived from its metadata md. It returns an error wrapping iceberg-go's
// catalog.ErrNoSuchView if the table is not one the cold tier wrote (it
// has no merge key property naming columns of its schema).
//
// The view has one version. Its id follows the table's current schema
// (schema id + 1), so that it changes when the columns do; its time is
// the table's last update; its properties carry the watermark of the
// table's current snapshot, W: the view's rows are the readings below it.
// Its default namespace is the table's, its default catalog catalog. Its
// SQL is resolve.SQL in each of resolve.ViewDialects, over the table
// named in catalog where the dialect names catalogs
// (resolve.Dialect.Table).
func (ReadingsViews) View(ident, tbl table.Identifier, md table.Metadata, catalog string) (view.Metadata, error) {
	ns, name := tbl[0], tbl[1]
	sc := md.CurrentSchema()
	props := md.Properties()
	key := strings.Split(props[PropMergeKey], ",")
	if props[PropMergeKey] == "" {
		return nil, fmt.Errorf("%w: %s.%s has no property %s", icecatalog.ErrNoSuchView, ns, name, PropMergeKey)
	}
	for _, c := range append(slices.Clone(key), "version", "recorded_at") {
		if _, ok := sc.FindFieldByName(c); !ok {
			return nil, fmt.Errorf("%w: %s.%s has no column %q", icecatalog.ErrNoSuchView, ns, name, c)
		}
	}
	var (
		fields []iceberg.NestedField
		cols   []string
	)
	marked := false
	for _, f := range sc.Fields() {
		if f.Name == series.ColumnSuperseded {
			marked = true
			continue
		}
		fields = append(fields, f)
		cols = append(cols, f.Name)
	}
	return derivedView(viewSpec{
		what:   "readings view",
		fields: fields,
		sql: func(d resolve.Dialect, relation string) string {
			return resolve.SQL(d, relation, cols, key, marked)
		},
		props: iceberg.Properties{
			"comment": fmt.Sprintf("MeterStore's readings of %s.%s: the winning version of each merge key (%s); "+
				"the rows below the watermark meterstore.watermark of the table's current snapshot", ns, name, strings.Join(key, ", ")),
			"meterstore.table":  ns + "." + name,
			PropMergeKey:        strings.Join(key, ","),
			"meterstore.marked": fmt.Sprint(marked),
		},
		summary: []string{SummaryWatermark},
	}, ident, tbl, md, catalog)
}

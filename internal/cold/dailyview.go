package cold

import (
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"
	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/internal/resolve"
	"github.com/meterstore/meterstore/internal/rollup"
)

// Beside each rollup table ns_daily.T (see CatchUpRollup), the REST catalog
// serves, through Views, a read-only view ns_daily.T_daily: the rollup's
// rows that hold, of each series' balancing day those of its highest
// rollup_version, which are the rows of MeterStore's relation daily for
// the days the rollup holds (those ending at or before the watermark its
// current snapshot names). Like the readings view it is derived on every
// load from the rollup's current metadata and stored nowhere.

// DailyViewSuffix ends the name of the daily view of a rollup table.
const DailyViewSuffix = "_daily"

// Views is the catalog.Views of the cold tier: the readings view of each
// table (ReadingsViews) and the daily view of each rollup table.
type Views struct{}

var _ catalog.Views = Views{}

// ViewsOf implements catalog.Views: a table offers its readings view, a
// rollup table its daily view.
func (Views) ViewsOf(name string) []string {
	return []string{name + ReadingsViewSuffix, name + DailyViewSuffix}
}

// TableOf implements catalog.Views.
func (Views) TableOf(ns, v string) (string, error) {
	if name, ok := strings.CutSuffix(v, DailyViewSuffix); ok && name != "" {
		return name, nil
	}
	return ReadingsViews{}.TableOf(ns, v)
}

// View implements catalog.Views: the daily view of a rollup table, or
// the readings view of any other.
func (Views) View(ident, tbl table.Identifier, md table.Metadata, catalog string) (view.Metadata, error) {
	if strings.HasSuffix(ident[1], DailyViewSuffix) {
		return dailyView(ident, tbl, md, catalog)
	}
	return ReadingsViews{}.View(ident, tbl, md, catalog)
}

// dailyView returns the daily view of rollup table tbl, or an error
// wrapping catalog.ErrNoSuchView if tbl is no rollup: it has no column
// rollup_version after malo_id, obis_code and balancing_day.
//
// Its SQL, in each of resolve.ViewDialects, partitions the rows by the
// columns before balancing_day (the series) and balancing_day; its schema
// is the rollup's without rollup_version; its properties carry the
// snapshot of the source table and the watermark the rollup's current
// snapshot reflects.
func dailyView(ident, tbl table.Identifier, md table.Metadata, catalog string) (view.Metadata, error) {
	ns, name := tbl[0], tbl[1]
	sc := md.CurrentSchema()
	var (
		fields    []iceberg.NestedField
		cols, key []string
		day, rv   bool
	)
	for _, f := range sc.Fields() {
		switch {
		case f.Name == "rollup_version":
			rv = true
			continue
		case f.Name == "balancing_day":
			day = true
			key = append(key, f.Name)
		case !day:
			key = append(key, f.Name)
		}
		fields = append(fields, f)
		cols = append(cols, f.Name)
	}
	if !rv || !day || len(key) < 3 || key[0] != "malo_id" || key[1] != "obis_code" {
		return nil, fmt.Errorf("%w: %s.%s is no daily rollup", icecatalog.ErrNoSuchView, ns, name)
	}
	return derivedView(viewSpec{
		what:   "daily view",
		fields: fields,
		sql: func(d resolve.Dialect, relation string) string {
			return resolve.RollupSQL(d, relation, cols, key, "rollup_version")
		},
		props: iceberg.Properties{
			"comment": fmt.Sprintf("MeterStore's daily rows of %s.%s: of each series' balancing day (%s), the rows of its highest rollup_version; "+
				"the days ending at or before the watermark meterstore.watermark", ns, name, strings.Join(key, ", ")),
			"meterstore.rollup": ns + "." + name,
		},
		summary: []string{rollup.SummaryWatermark, rollup.SummarySourceSnapshot},
	}, ident, tbl, md, catalog)
}

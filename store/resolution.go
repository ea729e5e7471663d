package store

import (
	"fmt"
	"strings"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/query"
	"github.com/meterstore/meterstore/internal/resolve"
	"github.com/meterstore/meterstore/series"
)

// resolutionRelation carries what an engine reading the Iceberg tables
// directly needs and cannot derive: version resolution as SQL to paste,
// one row per dialect (duckdb, spark, trino: the text of the readings
// views), and the merge key and the column to group balancing days by,
// which have no dialect.
func (s *Store) resolutionRelation() query.Relation {
	r := query.Relation{Schema: "system", Name: "resolution", Columns: []query.Column{
		{Name: "table", Type: "VARCHAR"}, {Name: "setting", Type: "VARCHAR"},
		{Name: "dialect", Type: "VARCHAR"}, {Name: "value", Type: "VARCHAR"},
	}}
	for _, t := range s.tables {
		// A quarantined table's files are keyed as it is stored.
		decl, _ := t.running()
		for _, d := range resolve.ViewDialects {
			r.Rows = append(r.Rows,
				[]any{decl.Name, "resolution_sql", d.Name, resolutionSQL(d, decl, false)},
				[]any{decl.Name, "marked_resolution_sql", d.Name, resolutionSQL(d, decl, true)})
		}
		r.Rows = append(r.Rows,
			[]any{decl.Name, "merge_key", nil, strings.Join(quoteAll(decl.MergeKey()), ", ")},
			[]any{decl.Name, "balancing_day_column", nil, "balancing_day"},
		)
	}
	return r
}

// ResolutionSQL returns the version resolution of table t in dialect
// ("duckdb", "spark" or "trino") for an engine reading its Iceberg table
// directly, by the table's name (in the namespace the engine uses): per
// merge key the highest version, then the latest recorded_at, over every
// version, the columns of the table but superseded. It is the statement
// of the table's readings view in that dialect.
func ResolutionSQL(t *Table, dialect string) (string, error) {
	d, err := resolutionDialect(dialect)
	if err != nil {
		return "", err
	}
	return resolutionSQL(d, t, false), nil
}

// MarkedResolutionSQL returns the same resolution as ResolutionSQL using
// the superseded marks the archival set (see the superseded column's
// doc): rows marked current are taken as they are, and only the merge keys
// of late corrections are resolved, at about the cost of a scan.
func MarkedResolutionSQL(t *Table, dialect string) (string, error) {
	d, err := resolutionDialect(dialect)
	if err != nil {
		return "", err
	}
	return resolutionSQL(d, t, true), nil
}

// resolutionDialect returns the dialect named name.
func resolutionDialect(name string) (resolve.Dialect, error) {
	var names []string
	for _, d := range resolve.ViewDialects {
		if d.Name == name {
			return d, nil
		}
		names = append(names, d.Name)
	}
	return resolve.Dialect{}, fmt.Errorf("store: no version resolution in dialect %q: want one of %s", name, strings.Join(names, ", "))
}

// resolutionSQL returns t's version resolution in d, marked or not, over
// the relation named as t, of the columns of its cold table but
// superseded.
func resolutionSQL(d resolve.Dialect, t *Table, marked bool) string {
	var cols []string
	for _, f := range cold.Schema(t).Fields() {
		if f.Name != series.ColumnSuperseded {
			cols = append(cols, f.Name)
		}
	}
	return resolve.SQL(d, d.Ident(t.Name), cols, t.MergeKey(), marked)
}

package query

import (
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/series"
)

// A layout is the columns of a table as the query relations have them, in
// table order, with the merge key.
type layout struct {
	cols []column
	key  []string // malo_id, obis_code, from, then the identity columns
}

type column struct {
	name string
	typ  string // DuckDB type
}

// layoutOf derives the layout from the cold schema, so that both tiers and
// the relations agree on names, order and types.
func layoutOf(t *series.Table) (layout, error) {
	var l layout
	l.key = []string{"malo_id", "obis_code", "from"}
	for _, c := range t.Columns {
		if c.Identity {
			l.key = append(l.key, c.Name)
		}
	}
	for _, f := range cold.Schema(t).Fields() {
		if f.Name == series.ColumnSuperseded {
			continue // the cold tier's, not the relations'
		}
		typ, err := duckType(f.Type)
		if err != nil {
			return layout{}, fmt.Errorf("query: column %q: %w", f.Name, err)
		}
		l.cols = append(l.cols, column{name: f.Name, typ: typ})
	}
	return l, nil
}

func duckType(t iceberg.Type) (string, error) {
	switch t := t.(type) {
	case iceberg.StringType:
		return "VARCHAR", nil
	case iceberg.TimestampTzType:
		return "TIMESTAMPTZ", nil
	case iceberg.DateType:
		return "DATE", nil
	case iceberg.Int64Type:
		return "BIGINT", nil
	case iceberg.DecimalType:
		return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision(), t.Scale()), nil
	}
	return "", fmt.Errorf("no DuckDB type for Iceberg type %s", t)
}

// names returns the quoted column names, comma separated.
func (l layout) names() string {
	s := ""
	for i, c := range l.cols {
		if i > 0 {
			s += ", "
		}
		s += ident(c.name)
	}
	return s
}

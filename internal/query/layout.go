package query

import (
	"database/sql/driver"
	"fmt"
	"strconv"
	"time"

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
	get  func(t *series.Table, r *series.Reading) (driver.Value, error)
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
		get, err := getter(t, f.Name)
		if err != nil {
			return layout{}, err
		}
		l.cols = append(l.cols, column{name: f.Name, typ: typ, get: get})
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

// getter returns the function that reads a column's value off a reading,
// as the appender takes it. Empty optional strings are NULL, as in the
// cold tier.
func getter(t *series.Table, name string) (func(*series.Table, *series.Reading) (driver.Value, error), error) {
	str := func(get func(r *series.Reading) string) func(*series.Table, *series.Reading) (driver.Value, error) {
		return func(_ *series.Table, r *series.Reading) (driver.Value, error) { return get(r), nil }
	}
	opt := func(get func(r *series.Reading) string) func(*series.Table, *series.Reading) (driver.Value, error) {
		return func(_ *series.Table, r *series.Reading) (driver.Value, error) {
			if v := get(r); v != "" {
				return v, nil
			}
			return nil, nil
		}
	}
	ts := func(get func(r *series.Reading) time.Time) func(*series.Table, *series.Reading) (driver.Value, error) {
		return func(_ *series.Table, r *series.Reading) (driver.Value, error) { return get(r).UTC(), nil }
	}
	switch name {
	case "malo_id":
		return str(func(r *series.Reading) string { return r.MaLo }), nil
	case "melo_id":
		return opt(func(r *series.Reading) string { return r.MeLo }), nil
	case "obis_code":
		return str(func(r *series.Reading) string { return r.OBIS }), nil
	case "sparte":
		return func(t *series.Table, r *series.Reading) (driver.Value, error) {
			if r.Commodity == 0 {
				return t.Commodity.String(), nil
			}
			return r.Commodity.String(), nil
		}, nil
	case "from":
		return ts(func(r *series.Reading) time.Time { return r.From }), nil
	case "to":
		return ts(func(r *series.Reading) time.Time { return r.To }), nil
	case "value":
		// The unscaled value: DECIMAL(18,6) is stored as an int64 of
		// millionths, as Decimal is.
		return func(_ *series.Table, r *series.Reading) (driver.Value, error) { return int64(r.Value), nil }, nil
	case "unit":
		return str(func(r *series.Reading) string { return r.Unit.String() }), nil
	case "quality":
		return str(func(r *series.Reading) string { return r.Quality.String() }), nil
	case "resolution":
		return str(func(r *series.Reading) string { return r.Resolution.String() }), nil
	case "version":
		return func(_ *series.Table, r *series.Reading) (driver.Value, error) { return r.Version, nil }, nil
	case "version_scope":
		return str(func(r *series.Reading) string { return r.VersionScope }), nil
	case "recorded_at":
		return ts(func(r *series.Reading) time.Time { return r.RecordedAt }), nil
	case "balancing_day":
		return func(_ *series.Table, r *series.Reading) (driver.Value, error) {
			d := r.BalancingDay
			return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC), nil
		}, nil
	case "subject_id":
		return opt(func(r *series.Reading) string { return r.Subject }), nil
	}
	for _, c := range t.Columns {
		if c.Name != name {
			continue
		}
		if c.Type != series.BigInt {
			return opt(func(r *series.Reading) string { return r.Extra[name] }), nil
		}
		return func(_ *series.Table, r *series.Reading) (driver.Value, error) {
			v, ok := r.Extra[name]
			if !ok || v == "" {
				return nil, nil
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("query: column %q: %w", name, err)
			}
			return n, nil
		}, nil
	}
	return nil, fmt.Errorf("query: column %q is not declared", name)
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

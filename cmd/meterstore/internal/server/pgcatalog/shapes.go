package pgcatalog

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/meterstore/meterstore/store"
)

// A shape is one relation as clients see it through the wire: its schema
// (a MeterStore table, or system), its name, and its columns with their
// PostgreSQL types.
type shape struct {
	schema, name string
	columns      []column
}

type column struct {
	name string
	typ  pgType
}

// A pgType is a PostgreSQL type as a column is declared with it and as
// format_type renders it back, which is how a built shape is compared with
// the one wanted.
type pgType struct{ decl, format string }

var decimalType = regexp.MustCompile(`^(?:DECIMAL|NUMERIC)\((\d+),\s*(\d+)\)$`)

// pgTypeOf returns the PostgreSQL type that stands for the DuckDB type
// name t: the one a column of t is sent as over the wire.
func pgTypeOf(t string) pgType {
	u := strings.ToUpper(strings.TrimSpace(t))
	if m := decimalType.FindStringSubmatch(u); m != nil {
		d := fmt.Sprintf("numeric(%s,%s)", m[1], m[2])
		return pgType{d, d}
	}
	switch u {
	case "VARCHAR", "TEXT", "STRING":
		return pgType{"text", "text"}
	case "BIGINT", "INT8", "LONG":
		return pgType{"int8", "bigint"}
	case "INTEGER", "INT4", "INT", "UINTEGER", "USMALLINT":
		if u == "UINTEGER" {
			return pgType{"int8", "bigint"}
		}
		return pgType{"int4", "integer"}
	case "SMALLINT", "INT2", "TINYINT", "UTINYINT":
		return pgType{"int2", "smallint"}
	case "DOUBLE", "FLOAT8":
		return pgType{"float8", "double precision"}
	case "FLOAT", "REAL", "FLOAT4":
		return pgType{"float4", "real"}
	case "BOOLEAN", "BOOL":
		return pgType{"bool", "boolean"}
	case "DATE":
		return pgType{"date", "date"}
	case "TIMESTAMP", "DATETIME", "TIMESTAMP_US":
		return pgType{"timestamp", "timestamp without time zone"}
	case "TIMESTAMP WITH TIME ZONE", "TIMESTAMPTZ":
		return pgType{"timestamptz", "timestamp with time zone"}
	case "HUGEINT", "UBIGINT", "UHUGEINT", "DECIMAL", "NUMERIC":
		return pgType{"numeric", "numeric"}
	case "INTERVAL":
		return pgType{"interval", "interval"}
	case "UUID":
		return pgType{"uuid", "uuid"}
	case "BLOB", "BYTEA":
		return pgType{"bytea", "bytea"}
	}
	return pgType{"text", "text"}
}

// SystemSchema is the schema of MeterStore's system tables.
const SystemSchema = "system"

// shapesOf asks the store for the relations of each declared table and
// of system, and their columns as DuckDB has them (DESCRIBE reads no
// row). A table that cannot be described is left out of the answer and
// named in skipped: its shapes, if built before, are kept as they are.
func shapesOf(ctx context.Context, s *store.Store) (shapes []shape, skipped []string, err error) {
	var host string
	for _, t := range s.Tables() {
		var ts []shape
		for _, r := range relations {
			cols, err := describe(ctx, s, t, t+"."+r)
			if err != nil {
				ts = nil
				skipped = append(skipped, t)
				break
			}
			ts = append(ts, shape{schema: t, name: r, columns: cols})
		}
		if ts != nil && host == "" {
			host = t
		}
		shapes = append(shapes, ts...)
	}
	if host == "" {
		return shapes, skipped, nil
	}
	var names []string
	err = s.QueryStream(ctx, host,
		"SELECT table_name FROM information_schema.tables WHERE table_schema = 'system' ORDER BY table_name",
		func(*store.ResultHeader) error { return nil },
		func(vals []any) error {
			if n, ok := vals[0].(string); ok {
				names = append(names, n)
			}
			return nil
		})
	if err != nil {
		return nil, nil, fmt.Errorf("pgcatalog: list the system tables: %w", err)
	}
	for _, n := range names {
		cols, err := describe(ctx, s, host, SystemSchema+"."+quoteDuck(n))
		if err != nil {
			return nil, nil, err
		}
		shapes = append(shapes, shape{schema: SystemSchema, name: n, columns: cols})
	}
	return shapes, skipped, nil
}

// describe returns the columns of relation as a statement over table
// sees them.
func describe(ctx context.Context, s *store.Store, table, relation string) ([]column, error) {
	var cols []column
	ni, ti := -1, -1
	err := s.QueryStream(ctx, table, "DESCRIBE "+relation,
		func(h *store.ResultHeader) error {
			for i, c := range h.Columns {
				switch c {
				case "column_name":
					ni = i
				case "column_type":
					ti = i
				}
			}
			if ni < 0 || ti < 0 {
				return fmt.Errorf("no column_name and column_type")
			}
			return nil
		},
		func(vals []any) error {
			n, _ := vals[ni].(string)
			t, _ := vals[ti].(string)
			cols = append(cols, column{name: n, typ: pgTypeOf(t)})
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("pgcatalog: describe %s: %w", relation, err)
	}
	return cols, nil
}

func quoteDuck(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

package query

import (
	"strings"
	"time"
)

// The statement as json_serialize_sql has it: what it references.

// epoch bounds the empty range of a statement that needs the relations
// but none of their rows.
var epoch = time.Unix(0, 0).UTC()

// describes reports whether node shows the schema of relations without
// reading them (DESCRIBE, SHOW TABLES), and nothing else of it reads
// either relation: SUMMARIZE reads them.
func describes(node map[string]any) bool {
	from, _ := node["from_table"].(map[string]any)
	if node["type"] != "SELECT_NODE" || from["type"] != "SHOW_REF" || from["show_type"] == "SUMMARY" {
		return false
	}
	var rest references
	for k, v := range node {
		if k != "from_table" {
			rest.walk(v)
		}
	}
	return len(rest.readings) == 0 && len(rest.completeness) == 0 && len(rest.daily) == 0 && !rest.opaque
}

// references collects what a statement names that could read readings.
type references struct {
	readings     []map[string]any // base table references to readings or readings_versions, of any table
	completeness []map[string]any // base table references to completeness, which reads readings
	daily        []map[string]any // base table references to daily, which reads readings
	opaque       bool             // query(...), query_table(...) or a SHOW of a table name
	// inner are the statements of the opaque calls query('...') that
	// name their statement by a string literal; unknown is set if some
	// opaque call names its relations otherwise.
	inner   []string
	unknown bool
	// others is whether the statement may read a relation besides the
	// tiers': another base table (the system tables, a CTE, DuckDB's
	// catalog views), a table function or a SHOW.
	others bool
}

func (r *references) walk(v any) {
	switch v := v.(type) {
	case map[string]any:
		switch v["type"] {
		case "BASE_TABLE":
			switch name := str(v["table_name"]); {
			case isReadings(name):
				r.readings = append(r.readings, v)
			case isCompleteness(name):
				r.completeness = append(r.completeness, v)
			case isDaily(name):
				r.daily = append(r.daily, v)
			default:
				r.others = true
			}
		case "TABLE_FUNCTION":
			r.others = true
			f, _ := v["function"].(map[string]any)
			switch name := strings.ToLower(str(f["function_name"])); name {
			case "query":
				r.opaque = true
				if text, ok := literal(f); ok {
					r.inner = append(r.inner, text)
				} else {
					r.unknown = true
				}
			case "query_table":
				r.opaque, r.unknown = true, true
			}
		case "SHOW_REF":
			r.others = true
			if str(v["table_name"]) != "" {
				r.opaque, r.unknown = true, true
			}
		}
		for _, c := range v {
			r.walk(c)
		}
	case []any:
		for _, c := range v {
			r.walk(c)
		}
	}
}

// literal returns the text of the one argument of the function call f if
// it is a string literal.
func literal(f map[string]any) (string, bool) {
	args, _ := f["children"].([]any)
	if len(args) != 1 {
		return "", false
	}
	c, _ := args[0].(map[string]any)
	if c["class"] != "CONSTANT" {
		return "", false
	}
	v, _ := c["value"].(map[string]any)
	typ, _ := v["type"].(map[string]any)
	text, ok := v["value"].(string)
	return text, ok && typ["id"] == "VARCHAR" && v["is_null"] != true
}

func isReadings(name string) bool {
	return strings.EqualFold(name, "readings") || strings.EqualFold(name, "readings_versions")
}

func str(v any) string { s, _ := v.(string); return s }

// tableOf returns the declared table whose relation the base table
// reference ref names: "" for the default table self (no schema or
// self's name), otherwise its schema, the name of another table. A
// reference into another catalog than the query's is self's: it binds to
// nothing, and reading self unbounded is the conservative answer.
func tableOf(ref map[string]any, self string) string {
	schema := strings.ToLower(str(ref["schema_name"]))
	if c := str(ref["catalog_name"]); c != "" && !strings.EqualFold(c, database) {
		return ""
	}
	if schema == "" || schema == self {
		return ""
	}
	return schema
}

// inMain returns the first relation of the tiers the statement names in
// the schema main of the query's database, as written, "" if none. No
// table's relations are there: each table's are in the schema of its
// name, and the default table's are also found unqualified.
func (r *references) inMain() (schema, name string) {
	for _, refs := range [][]map[string]any{r.readings, r.completeness, r.daily} {
		for _, ref := range refs {
			c := str(ref["catalog_name"])
			if strings.EqualFold(str(ref["schema_name"]), "main") && (c == "" || strings.EqualFold(c, database)) {
				return str(ref["schema_name"]), str(ref["table_name"])
			}
		}
	}
	return "", ""
}

// qualify sets the catalog of every table reference system.x to the
// database, and reports whether there was one. DuckDB's own catalog is
// called system too, so that a schema of that name is ambiguous in a
// reference without a catalog.
func qualify(v any) bool {
	found := false
	switch v := v.(type) {
	case map[string]any:
		if v["type"] == "BASE_TABLE" && str(v["catalog_name"]) == "" && strings.EqualFold(str(v["schema_name"]), "system") {
			v["catalog_name"] = database
			found = true
		}
		for _, c := range v {
			found = qualify(c) || found
		}
	case []any:
		for _, c := range v {
			found = qualify(c) || found
		}
	}
	return found
}

// columnNames returns the names by which the statement stmt may read a
// column, lowercase: every part of every column reference and every USING
// column. It returns nil, every column, where the statement reads columns
// it does not name: a star (*, t.*, COLUMNS(...)) or a positional
// reference but in ORDER BY or GROUP BY (ORDER BY ALL), where they name
// the select list's columns, a NATURAL join, or a reference to a whole row
// by its relation's name or alias.
func columnNames(stmt any) map[string]bool {
	var (
		names    = map[string]bool{}
		rows     = map[string]bool{} // names of relations
		last     []string            // the last part of each column reference
		everyCol bool
	)
	// listed: v is in an ORDER BY or GROUP BY, whose stars and positions
	// are the select list's.
	var walk func(v any, listed bool)
	walk = func(v any, listed bool) {
		switch v := v.(type) {
		case map[string]any:
			if v["type"] == "SELECT_NODE" {
				listed = false
			}
			switch str(v["class"]) {
			case "STAR", "POSITIONAL_REFERENCE":
				everyCol = everyCol || !listed
			case "COLUMN_REF":
				parts, _ := v["column_names"].([]any)
				for _, p := range parts {
					names[strings.ToLower(str(p))] = true
				}
				if len(parts) > 0 {
					last = append(last, strings.ToLower(str(parts[len(parts)-1])))
				}
			}
			if v["type"] == "JOIN" && v["ref_type"] == "NATURAL" {
				everyCol = true
			}
			if using, ok := v["using_columns"].([]any); ok {
				for _, u := range using {
					names[strings.ToLower(str(u))] = true
				}
			}
			// A table reference's alias and name; an expression (which has
			// a class) has an alias too, of the select list.
			for _, k := range []string{"alias", "table_name"} {
				if s := str(v[k]); s != "" && v["class"] == nil {
					rows[strings.ToLower(s)] = true
				}
			}
			if ctes, ok := v["cte_map"].(map[string]any); ok {
				entries, _ := ctes["map"].([]any)
				for _, e := range entries {
					if m, ok := e.(map[string]any); ok {
						rows[strings.ToLower(str(m["key"]))] = true
					}
				}
			}
			for k, c := range v {
				walk(c, listed || k == "modifiers" || k == "group_expressions")
			}
		case []any:
			for _, c := range v {
				walk(c, listed)
			}
		}
	}
	walk(stmt, false)
	for _, l := range last {
		if rows[l] {
			everyCol = true
		}
	}
	if everyCol {
		return nil
	}
	return names
}

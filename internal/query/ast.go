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
	return len(rest.readings) == 0 && len(rest.completeness) == 0 && !rest.opaque
}

// references collects what a statement names that could read readings.
type references struct {
	readings     []map[string]any // base table references to readings or readings_versions, of any table
	completeness []map[string]any // base table references to completeness, which reads readings
	opaque       bool             // query(...), query_table(...) or a SHOW of a table name
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
			}
		case "TABLE_FUNCTION":
			f, _ := v["function"].(map[string]any)
			if name := strings.ToLower(str(f["function_name"])); name == "query" || name == "query_table" {
				r.opaque = true
			}
		case "SHOW_REF":
			if str(v["table_name"]) != "" {
				r.opaque = true
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

func isReadings(name string) bool {
	return strings.EqualFold(name, "readings") || strings.EqualFold(name, "readings_versions")
}

func str(v any) string { s, _ := v.(string); return s }

// tableOf returns the declared table whose relation the base table
// reference ref names: "" for the table self whose engine runs the
// statement (no schema, main or self's name), otherwise its schema, the
// name of another table. A reference into another catalog than the
// query's is self's: it binds to nothing, and reading self unbounded is
// the conservative answer.
func tableOf(ref map[string]any, self string) string {
	schema := strings.ToLower(str(ref["schema_name"]))
	if c := str(ref["catalog_name"]); c != "" && !strings.EqualFold(c, database) {
		return ""
	}
	if schema == "" || schema == "main" || schema == self {
		return ""
	}
	return schema
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

package pgcatalog

import (
	"testing"
)

var testSchemas = map[string]bool{"power": true, "gas": true, SystemSchema: true}

// TestHandles checks the routing of statements: catalog statements here,
// statements over MeterStore relations, and anything that is not one
// SELECT calling allowed functions, not.
func TestHandles(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want bool
	}{
		{"SELECT version()", true},
		{"select pg_catalog.version();", true},
		{"SELECT current_schema()", true},
		{"SELECT current_database(), current_user, session_user", true},
		{"select current_catalog", true},
		{"SELECT relname FROM pg_class", true},
		{"SELECT table_name FROM information_schema.tables WHERE table_schema = 'power'", true},
		{"SELECT c.relname FROM pg_catalog.pg_class c WHERE c.relname = 'readings'", true},
		{"SELECT n.nspname FROM pg_catalog.pg_namespace n WHERE n.nspname OPERATOR(pg_catalog.~) '^(power)$' COLLATE pg_catalog.default", true},
		{"SELECT oid::regtype::text FROM pg_type WHERE oid = to_regtype($1)", true},
		{"SELECT 'power.readings'::regclass", true},
		{"/* a comment; with a semicolon */ SELECT 1 FROM pg_class -- and; another\n", true},
		{"WITH x AS (SELECT relname FROM pg_class) SELECT * FROM x", true},
		{"SELECT format_type(atttypid, atttypmod)::varchar(10) FROM pg_attribute", true},
		// Data statements: the store answers them.
		{"SELECT 1", false},
		{"SELECT now()", false},
		{`SELECT malo_id, "from" FROM power.readings WHERE "from" >= $1`, false},
		{`SELECT * FROM "power"."readings"`, false},
		{`SELECT * FROM POWER . readings`, false},
		{"SELECT * FROM system.tables", false},
		{"SELECT * FROM gas.completeness", false},
		{"SELECT * FROM readings", false},
		// Mixing a MeterStore relation with the catalog: refused by the
		// store, never answered here.
		{"SELECT c.relname, r.value FROM pg_catalog.pg_class c, power.readings r", false},
		{"SELECT version(), (SELECT count(*) FROM power.readings)", false},
		{"SELECT relname FROM pg_class WHERE relname IN (SELECT malo_id FROM gas.readings_versions)", false},
		// Not one SELECT.
		{"SELECT relname FROM pg_class; SELECT 1", false},
		{"SHOW server_version", false},
		{"SET search_path = power", false},
		{"BEGIN", false},
		{"INSERT INTO pg_class SELECT * FROM pg_class", false},
		{"SELECT relname INTO x FROM pg_class", false},
		{"WITH d AS (DELETE FROM pg_description RETURNING *) SELECT * FROM d", false},
		{"SELECT relname FROM pg_class WHERE relname = 'unterminated", false},
		{"SELECT $$unterminated FROM pg_class", false},
		{"", false},
		// Functions outside the allowlist.
		{"SELECT pg_read_file('/etc/passwd')", false},
		{"SELECT pg_catalog.pg_ls_dir('.') FROM pg_class", false},
		{"SELECT lo_import('/etc/passwd')", false},
		{"SELECT set_config('role', 'postgres', false), version()", false},
		{"SELECT pg_sleep(10), version()", false},
		{"SELECT query_to_xml('select 1', true, true, ''), current_user", false},
		{"SELECT dblink('dbname=x', 'select 1'), version()", false},
		{"SELECT public.version()", false},
		{`SELECT "pg_read_file"('/etc/passwd') FROM pg_class`, false},
		{"SELECT now() AT TIME ZONE pg_read_file('/etc/passwd') FROM pg_class", false},
		{"SELECT relname FROM pg_class pg_sleep(x)", false},
		{"SELECT ($1).pg_sleep(1) FROM pg_class", false},
		// The cluster's running state.
		{"SELECT query FROM pg_stat_activity", false},
		{"SELECT * FROM pg_catalog.pg_settings", false},
		{"SELECT * FROM pg_catalog.pg_statio_user_tables", false},
		{"SELECT * FROM pg_catalog.pg_locks", false},
		// What psql's \d reads of statistics objects is the shapes'.
		{"SELECT stxname FROM pg_catalog.pg_statistic_ext", true},
	} {
		if got := analyse(tc.sql, testSchemas); got.handled() != tc.want {
			t.Errorf("Handles(%q) = %v, want %v (%v)", tc.sql, got.handled(), tc.want, got.err)
		}
	}
}

// TestLexLiterals checks that the text of literals and quoted names is
// never read as a name: a MeterStore relation named in a string is no
// reference to it, and a function named in one is not called.
func TestLexLiterals(t *testing.T) {
	for _, sql := range []string{
		"SELECT relname FROM pg_class WHERE relname = 'power.readings'",
		"SELECT relname FROM pg_class WHERE relname = E'it\\'s power.readings'",
		"SELECT relname FROM pg_class WHERE relname = $q$pg_read_file('x'); power.readings$q$",
		"SELECT relname FROM pg_class WHERE relname = 'a''pg_sleep(1)'",
		"SELECT relname AS \"power.readings; pg_sleep(1)\" FROM pg_class",
		"SELECT relname FROM pg_class /* power.readings /* nested */ pg_sleep(1) */",
	} {
		if r := analyse(sql, testSchemas); !r.handled() {
			t.Errorf("Handles(%q) = false (%v), want true", sql, r.err)
		}
	}
}

// TestPGTypeOf checks the PostgreSQL type of each DuckDB type store
// reports.
func TestPGTypeOf(t *testing.T) {
	for duck, want := range map[string]string{
		"VARCHAR": "text", "BIGINT": "int8", "INTEGER": "int4", "SMALLINT": "int2", "DOUBLE": "float8",
		"FLOAT": "float4", "BOOLEAN": "bool", "DATE": "date", "TIMESTAMP": "timestamp",
		"TIMESTAMP WITH TIME ZONE": "timestamptz", "DECIMAL(18,6)": "numeric(18,6)", "DECIMAL(20,0)": "numeric(20,0)",
		"HUGEINT": "numeric", "UBIGINT": "numeric", "INTERVAL": "interval", "UUID": "uuid", "BLOB": "bytea",
		"STRUCT(a INTEGER)": "text", "INTEGER[]": "text",
	} {
		if got := pgTypeOf(duck).decl; got != want {
			t.Errorf("pgTypeOf(%s) = %s, want %s", duck, got, want)
		}
	}
}

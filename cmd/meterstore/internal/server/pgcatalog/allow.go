package pgcatalog

import "strings"

// The names a catalog statement may call. Everything else is refused
// before PostgreSQL sees the statement: the reader role and the read-only
// transaction already keep files, large objects, other databases and
// settings out of reach, and this list keeps them out even if a grant
// were wrong. A function that would answer for the shape database rather
// than for the deployment (a relation's size, the backend's pid, the
// server's start time) is left out: its answer would not be true.

// catalogFuncs are the catalog and session functions: a statement that
// calls one asks about the catalog, and is routed here.
var catalogFuncs = set(
	"version", "current_database", "current_schema", "current_schemas", "current_user",
	"session_user", "current_catalog", "current_role", "current_setting",
	"format_type", "pg_get_expr", "pg_get_userbyid", "pg_get_constraintdef", "pg_get_indexdef",
	"pg_get_viewdef", "pg_get_serial_sequence", "pg_get_statisticsobjdef_columns",
	"pg_get_partkeydef", "pg_get_function_arguments", "pg_get_function_result",
	"pg_get_function_identity_arguments", "pg_get_triggerdef", "pg_get_ruledef", "pg_get_keywords",
	"pg_relation_is_publishable", "pg_table_is_visible", "pg_type_is_visible",
	"pg_function_is_visible", "pg_opclass_is_visible", "pg_collation_is_visible",
	"pg_conversion_is_visible", "pg_operator_is_visible",
	"obj_description", "col_description", "shobj_description",
	"pg_encoding_to_char", "pg_char_to_encoding",
	"to_regtype", "to_regclass", "to_regnamespace", "to_regproc", "to_regprocedure",
	"to_regrole", "to_regoper", "to_regoperator", "to_regcollation",
)

// The privilege functions (has_table_privilege, pg_has_role) are not on
// the list: they would answer for the reader role, not for the session's
// token.

// sessionUser are the words that name the session's user: the Catalog
// answers them with the user the protocol server says (Options.User), since
// the statement runs as the reader role.
var sessionUser = set("current_user", "session_user", "current_role", "user")

// plainFuncs are the functions of values alone, which catalog queries
// use on what they read.
var plainFuncs = set(
	"array_to_string", "array_agg", "string_agg", "array_upper", "array_lower", "array_length",
	"array_position", "array_positions", "cardinality", "unnest", "generate_series",
	"generate_subscripts", "replace", "lower", "upper", "length", "char_length", "octet_length",
	"substr", "strpos", "btrim", "ltrim", "rtrim", "split_part", "concat", "concat_ws",
	"format", "quote_ident", "quote_literal", "quote_nullable", "left", "right", "lpad", "rpad",
	"regexp_replace", "regexp_match", "regexp_matches", "starts_with", "translate",
	"count", "min", "max", "sum", "avg", "bool_and", "bool_or", "every",
	"row_number", "rank", "dense_rank",
	"json_build_object", "json_build_array", "json_agg", "json_object_agg",
	"jsonb_build_object", "jsonb_build_array", "jsonb_agg", "jsonb_object_agg",
	"to_json", "to_jsonb", "row_to_json", "array_to_json",
	"abs", "floor", "ceil", "ceiling", "round", "trunc", "mod", "pg_typeof", "pg_size_pretty",
	"now", "textlen",
)

// syntax are the words that precede a parenthesis in SQL's own syntax
// (IN (...), EXISTS (...), OVER (...), numeric(18,6)) rather than in a
// call.
var syntax = set(
	"select", "from", "where", "join", "on", "using", "and", "or", "not", "in", "exists",
	"any", "all", "some", "array", "values", "cast", "coalesce", "nullif", "greatest", "least",
	"row", "over", "filter", "group", "when", "then", "else", "case", "is", "by", "lateral",
	"having", "limit", "offset", "distinct", "union", "intersect", "except", "between",
	"like", "ilike", "similar", "extract", "overlay", "position", "substring", "trim",
	"operator", "collate", "escape", "fetch", "only", "recursive", "as", "materialized",
	// Types with a modifier.
	"numeric", "decimal", "varchar", "char", "character", "varying", "bit", "varbit",
	"timestamp", "timestamptz", "time", "timetz", "interval", "float",
)

// bareCatalog are the session functions called without parentheses.
var bareCatalog = set("current_catalog", "current_user", "session_user", "current_role", "current_schema", "user")

// runtimeRelations are the relations that tell of the cluster's running
// state (sessions, locks, settings, statistics, replication) rather than
// of the shapes: their answer would be the shape cluster's, not
// MeterStore's, and some tell of other databases' sessions.
var runtimeRelations = set(
	"pg_locks", "pg_settings", "pg_file_settings", "pg_hba_file_rules", "pg_ident_file_mappings",
	"pg_db_role_setting", "pg_authid", "pg_shadow", "pg_prepared_xacts", "pg_replication_slots",
	"pg_replication_origin", "pg_replication_origin_status", "pg_backend_memory_contexts",
	"pg_shmem_allocations", "pg_config", "pg_user_mappings", "pg_subscription", "pg_subscription_rel",
)

// runtimeRelation reports whether name is one of runtimeRelations or a
// statistics view (pg_stat_activity, pg_statio_user_tables).
func runtimeRelation(name string) bool {
	return runtimeRelations[name] || strings.HasPrefix(name, "pg_stat_") || strings.HasPrefix(name, "pg_statio_")
}

// catalogTypes are the types of catalog references, as in
// 'power.readings'::regclass.
var catalogTypes = set("regclass", "regtype", "regnamespace", "regproc", "regprocedure",
	"regoper", "regoperator", "regrole", "regcollation", "regconfig", "regdictionary")

// writes are the words of a statement that writes or defines; the
// read-only transaction refuses those too, but a statement holding one
// is no catalog query.
var writes = set(
	"into", "insert", "update", "delete", "merge", "truncate", "create", "drop", "alter",
	"grant", "revoke", "call", "copy", "lock", "listen", "notify", "vacuum",
)

// catalogSchemas are PostgreSQL's own schemas.
var catalogSchemas = set("pg_catalog", "information_schema")

// relations are a MeterStore table's relations.
var relations = []string{"readings", "readings_versions", "completeness"}

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

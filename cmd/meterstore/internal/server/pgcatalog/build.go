package pgcatalog

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
)

// shapesLock keys the advisory lock under which one process at a time
// rebuilds a shape database ("MSshapes").
const shapesLock = 0x4d536873

// build makes the shape database that conn is connected to hold exactly
// shapes, one schema per MeterStore table and system, readable in its
// catalog by reader: a schema that differs from its shape is dropped and
// made anew, one of a table no longer declared is dropped, and those in
// keep (tables that could not be described now) are left as they are.
// Everything else, the public schema included, is dropped: the database
// shows what the deployment holds and nothing else.
func build(ctx context.Context, conn *pgx.Conn, shapes []shape, keep []string, reader string) error {
	want := map[string][]shape{}
	for _, sh := range shapes {
		want[sh.schema] = append(want[sh.schema], sh)
	}
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(shapesLock)); err != nil {
			return err
		}
		have, err := existing(ctx, tx)
		if err != nil {
			return err
		}
		var drops, stmts []string
		for schema := range have {
			if _, ok := want[schema]; !ok && !contains(keep, schema) {
				drops = append(drops, "DROP SCHEMA "+ident(schema)+" CASCADE")
			}
		}
		for schema, shs := range want {
			if sig, ok := have[schema]; ok && sig == signature(shs) {
				continue
			}
			if _, ok := have[schema]; ok {
				drops = append(drops, "DROP SCHEMA "+ident(schema)+" CASCADE")
			}
			stmts = append(stmts, "CREATE SCHEMA "+ident(schema))
			for _, sh := range shs {
				cols := make([]string, len(sh.columns))
				for i, c := range sh.columns {
					cols[i] = ident(c.name) + " " + c.typ.decl
				}
				stmts = append(stmts, fmt.Sprintf("CREATE TABLE %s.%s (%s)", ident(schema), ident(sh.name), strings.Join(cols, ", ")))
			}
		}
		stmts = append(drops, stmts...)
		for schema := range want {
			// REFERENCES, not SELECT: it shows the relations in
			// information_schema as SELECT would, and a statement that
			// reaches one here is refused rather than answered with
			// an empty relation.
			stmts = append(stmts, "GRANT USAGE ON SCHEMA "+ident(schema)+" TO "+ident(reader),
				"GRANT REFERENCES ON ALL TABLES IN SCHEMA "+ident(schema)+" TO "+ident(reader))
		}
		for _, s := range stmts {
			if _, err := tx.Exec(ctx, s); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
		return nil
	})
}

// existing returns the signature of every schema of the database but
// PostgreSQL's own.
func existing(ctx context.Context, tx pgx.Tx) (map[string]string, error) {
	rows, err := tx.Query(ctx, `
SELECT n.nspname, coalesce(c.relname, ''), coalesce(a.attname, ''), coalesce(format_type(a.atttypid, a.atttypmod), '')
FROM pg_namespace n
LEFT JOIN pg_class c ON c.relnamespace = n.oid AND c.relkind = 'r'
LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE n.nspname !~ '^pg_' AND n.nspname <> 'information_schema'
ORDER BY 1, 2, a.attnum`)
	if err != nil {
		return nil, err
	}
	var cur []shape
	var schema string
	out := map[string]string{}
	flush := func() {
		if schema != "" {
			out[schema] = signature(cur)
		}
	}
	for rows.Next() {
		var ns, rel, col, typ string
		if err := rows.Scan(&ns, &rel, &col, &typ); err != nil {
			return nil, err
		}
		if ns != schema {
			flush()
			schema, cur = ns, nil
		}
		if rel == "" {
			continue
		}
		if len(cur) == 0 || cur[len(cur)-1].name != rel {
			cur = append(cur, shape{schema: ns, name: rel})
		}
		if col != "" {
			last := &cur[len(cur)-1]
			last.columns = append(last.columns, column{name: col, typ: pgType{format: typ}})
		}
	}
	flush()
	return out, rows.Err()
}

// signature renders the relations of one schema, in name order, as
// format_type has their columns.
func signature(shs []shape) string {
	sort.SliceStable(shs, func(i, j int) bool { return shs[i].name < shs[j].name })
	var b strings.Builder
	for _, sh := range shs {
		b.WriteString(sh.name)
		b.WriteByte('(')
		for i, c := range sh.columns {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(c.name + " " + c.typ.format)
		}
		b.WriteString(");")
	}
	return b.String()
}

func ident(s string) string { return pgx.Identifier{s}.Sanitize() }

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

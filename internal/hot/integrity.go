package hot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/series"
)

// Integrity by statement.
//
// In a table of IntegrityStatement, PostgreSQL enforces every rule for
// every client, psql's COPY included, without a GiST probe per row:
//
//   - Overlapping intervals within a version: the table has one resolution
//     of fixed length and the grid CHECK puts every interval on its grid,
//     so two intervals of a series overlap only if they start together,
//     which the primary key governs.
//   - A value restated under an existing key and version: the primary key
//     refuses the insert, and a statement trigger refuses every UPDATE.
//   - Check digits and codes: the market location, the OBIS code and the
//     version scope are the same for the many readings of a series, so a
//     statement trigger checks each distinct combination of them among the
//     new rows once; the other codes are cheap per-row CHECKs.
//   - One network operator per reading: the same trigger groups the new
//     rows by series, version scope, version and partition, and records
//     each group as a span [first from, last to) of its operator in the
//     ownership relation <table>_operators, whose exclusion constraint
//     refuses two operators for overlapping spans of a series. On one grid
//     two spans overlap only if they share a reading, so this is exact. A
//     group with a gap (or of several versions of a reading, which the
//     version in the grouping rules out) would claim readings it does not
//     have, so its rows are recorded one span each instead. A span already
//     recorded for the operator is not recorded again. The dictionary
//     layouts keep a row per series id instead, merged under its primary
//     key (owners_series.go).
//
// In the dictionary layout (layout_dictionary.go) the market location, the OBIS
// code and the version scope are dictionary columns with CHECKs of their
// own, checked once per series as they are inserted; the trigger checks
// instead that every series and attr id of the new rows names a
// dictionary row of the row's bucket (foreign_key_violation otherwise),
// which keeps the primary key (series, from, version) equal to the merge
// key and version, and records the spans by series id, grouped by series,
// operator, version and bucket.
//
// The trigger is a statement-level AFTER INSERT trigger with a transition
// table, on the parent and on every partition, since a statement fires
// only the triggers of the table it names. Its cost is one hash
// aggregation over the new rows and an insert per series and day into a
// relation about a hundredth the size of the table.

// Integrity returns the way t's rows are checked against each other: its
// declared integrity, or the one it was declared with before.
func (h *Tier) Integrity(ctx context.Context, t *series.Table) (series.Integrity, error) {
	i, err := h.integrityOf(ctx, h.pool, t)
	if err != nil {
		return 0, classify("integrity", t.Name, err)
	}
	return i, nil
}

// integrityOf returns the way t's rows are checked against each other: its
// declared one, or for IntegrityAuto the one it was declared with,
// recorded in hot_tables and remembered after the first look.
func (h *Tier) integrityOf(ctx context.Context, q querier, t *series.Table) (series.Integrity, error) {
	if t.Integrity != series.IntegrityAuto {
		return t.Integrity, nil
	}
	info, ok, err := h.declared(ctx, q, t)
	switch {
	case err != nil:
		return 0, err
	case !ok:
		return 0, &series.Error{Kind: series.InvalidInput, Op: "write", Table: t.Name, Err: errors.New("table not declared")}
	}
	return info.integrity, nil
}

// layoutOf returns the layout t's rows are stored in, as its stored
// definition records it. A table not declared is taken to be in the rows
// layout: the statement that names it fails as it would have before.
func (h *Tier) layoutOf(ctx context.Context, q querier, t *series.Table) (layout, error) {
	info, _, err := h.declared(ctx, q, t)
	return info.layout, err
}

// notDeclared is what declared returns of a table not declared: the rows
// layout, as every table had before the dictionary layout.
func notDeclared() tableInfo { return tableInfo{layout: layoutRows} }

// declared returns what t's stored definition records of its integrity
// and layout, remembered after the first look; false if t is not
// declared (or no table is).
func (h *Tier) declared(ctx context.Context, q querier, t *series.Table) (tableInfo, bool, error) {
	h.mu.Lock()
	info, ok := h.tables[t.Name]
	h.mu.Unlock()
	if ok {
		return info, true, nil
	}
	// Looked for first, as a statement naming a missing table would abort
	// the caller's transaction.
	var meta bool
	if err := q.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, h.ident(metaTable)).Scan(&meta); err != nil || !meta {
		return notDeclared(), false, err
	}
	var stored []byte
	err := q.QueryRow(ctx, `SELECT definition FROM `+h.ident(metaTable)+` WHERE name = $1`, t.Name).Scan(&stored)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return notDeclared(), false, nil
	case err != nil:
		return notDeclared(), false, err
	}
	var d definition
	if err := json.Unmarshal(stored, &d); err != nil {
		return notDeclared(), false, &series.Error{Kind: series.InvariantViolation, Op: "write", Table: t.Name, Err: fmt.Errorf("stored definition: %w", err)}
	}
	d = d.normalize()
	i, err := d.integrity()
	if err == nil {
		info.layout, err = d.layout()
	}
	if err != nil {
		return notDeclared(), false, &series.Error{Kind: series.InvariantViolation, Op: "write", Table: t.Name, Err: fmt.Errorf("stored definition: %w", err)}
	}
	info.integrity = i
	h.remember(t.Name, info)
	return info, true, nil
}

// knownLayout returns the layout of t if the Tier remembers it.
func (h *Tier) knownLayout(t *series.Table) (layout, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	info, ok := h.tables[t.Name]
	return info.layout, ok
}

// remember records the integrity and layout of a declared table.
func (h *Tier) remember(table string, info tableInfo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tables == nil {
		h.tables = map[string]tableInfo{}
	}
	h.tables[table] = info
}

// forget drops what remember recorded of a purged table.
func (h *Tier) forget(table string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.tables, table)
}

// tableInfo is what a Tier remembers of a declared table.
type tableInfo struct {
	integrity series.Integrity
	layout    layout
}

// integrityCache is the Tier's memory of the tables' integrity and layout.
type integrityCache struct {
	mu     sync.Mutex
	tables map[string]tableInfo
}

// ownersName returns the name of t's ownership relation.
func ownersName(t *series.Table) string { return t.Name + "_operators" }

// checkFunc returns the name of t's statement check function.
func checkFunc(t *series.Table) string { return t.Name + "_rows_check" }

// immutableFunc is the schema's function that refuses an UPDATE.
const immutableFunc = "hot_immutable"

// checkFuncDDL returns the CREATE OR REPLACE FUNCTION of t's statement
// check in layout l.
func (h *Tier) checkFuncDDL(t *series.Table, l layout) string {
	return `CREATE OR REPLACE FUNCTION ` + h.ident(checkFunc(t)) + `() RETURNS trigger LANGUAGE plpgsql AS $f$` + l.checkBody(h, t) + `$f$`
}

// refreshCheckFunc replaces t's statement check function in tx if its
// body is not the one this version writes: a table declared by an older
// version then gets the newer check, as the triggers call the function by
// oid, which replacing it keeps. Its rules depend only on the merge key,
// which never changes, so every body it had enforces the same rules; the
// body compared is the one of the table's layout l.
func (h *Tier) refreshCheckFunc(ctx context.Context, tx pgx.Tx, t *series.Table, l layout) error {
	var have string
	err := tx.QueryRow(ctx, `SELECT prosrc FROM pg_proc WHERE oid = to_regprocedure($1)`, h.ident(checkFunc(t))+"()").Scan(&have)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return &series.Error{Kind: series.InvariantViolation, Op: "ensure", Table: t.Name,
			Err: fmt.Errorf("integrity statement, but its check function %s is missing", h.ident(checkFunc(t)))}
	case err != nil:
		return err
	case have == l.checkBody(h, t):
		return nil
	}
	if _, err := tx.Exec(ctx, h.checkFuncDDL(t, l)); err != nil {
		return err
	}
	h.log.Info("hot: statement check replaced", "table", t.Name)
	return nil
}

// each returns xs, each with prefix p.
func each(p string, xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = p + x
	}
	return out
}

// bucketExpr returns the start of the partition of the column from: a
// span never crosses a partition boundary, so a dropped partition takes
// its spans.
func bucketExpr(t *series.Table, from string) string {
	if t.Width == series.Monthly {
		return `date_trunc('month', ` + from + `, 'UTC')`
	}
	return `date_bin(interval '1 day', ` + from + `, timestamptz '1970-01-01 00:00:00+00')`
}

// wholeCond returns the condition that a group (columns n, lo and hi,
// each with prefix g) has no gap: as many rows as steps of t's one
// resolution between its first start and its last end.
func wholeCond(t *series.Table, g string) string {
	step, _ := t.AcceptedResolutions()[0].Fixed()
	return fmt.Sprintf(`%[1]sn * interval '%[2]d seconds' = %[1]shi - %[1]slo`, g, int64(step.Seconds()))
}

// ownOn returns the conditions matching an owner row o to a new row r on
// the identity columns.
func ownOn(key []string) []string {
	out := make([]string, len(key))
	for i, k := range key {
		out[i] = "o." + k + " = r." + k
	}
	return out
}

// immutableBody is the body of the trigger function that refuses an
// UPDATE of a table of IntegrityStatement: a correction is a new version.
const immutableBody = `
BEGIN
	RAISE EXCEPTION 'readings of relation "%" are not updated: a correction is a new version', TG_TABLE_NAME
		USING ERRCODE = 'restrict_violation';
END
`

// triggerDDL returns the statements that put t's statement triggers on rel,
// the parent or a partition named name.
func (h *Tier) triggerDDL(t *series.Table, rel, name string) []string {
	return []string{
		`CREATE TRIGGER ` + quote(name+"_rows") + ` AFTER INSERT ON ` + rel +
			` REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ` + h.ident(checkFunc(t)) + `()`,
		`CREATE TRIGGER ` + quote(name+"_immutable") + ` BEFORE UPDATE ON ` + rel +
			` FOR EACH STATEMENT EXECUTE FUNCTION ` + h.ident(immutableFunc) + `()`,
	}
}

// forgetOwners deletes the spans of a dropped partition [from, to) from
// t's ownership relation, in tx. Spans never cross a partition boundary,
// and a series id of the dictionary layouts names a series in one.
func (h *Tier) forgetOwners(ctx context.Context, tx pgx.Tx, t *series.Table, from, to time.Time) error {
	bySpan, err := h.ownersBySpan(ctx, tx, t)
	if err != nil {
		return err
	}
	cond := `lower(spans[1]) >= $1 AND lower(spans[1]) < $2`
	if bySpan {
		cond = `span <@ tstzrange($1, $2)`
	}
	_, err = tx.Exec(ctx, `DELETE FROM `+h.ident(ownersName(t))+` WHERE `+cond, from, to)
	return err
}

// obisValid returns the condition that col is a canonical OBIS code.
func obisValid(col string) string {
	return col + ` ~ '^` + obisPattern() + `$'`
}

// obisPattern is the regular expression of a canonical OBIS code: groups
// A-B:C.D.E with an optional *F, without leading zeros.
func obisPattern() string {
	return fmt.Sprintf(`%[1]s-%[1]s:%[1]s\.%[1]s\.%[1]s(?:\*%[1]s)?`, obisGroup)
}

// scopeValid returns the condition that col is a version scope.
func scopeValid(col string) string {
	return `length(` + col + `) <= 43 AND ` + col + ` ~ '^[^:[:space:]]+:[0-9][0-9][0-9][0-9]-(?:0[1-9]|1[0-2])$'`
}

package hot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
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
//     recorded for the operator is not recorded again.
//
// In the dictionary layout (dictionary.go) the market location, the OBIS
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
		return tableInfo{}, false, err
	}
	var stored []byte
	err := q.QueryRow(ctx, `SELECT definition FROM `+h.ident(metaTable)+` WHERE name = $1`, t.Name).Scan(&stored)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return tableInfo{}, false, nil
	case err != nil:
		return tableInfo{}, false, err
	}
	var d definition
	if err := json.Unmarshal(stored, &d); err != nil {
		return tableInfo{}, false, &series.Error{Kind: series.InvariantViolation, Op: "write", Table: t.Name, Err: fmt.Errorf("stored definition: %w", err)}
	}
	d = d.normalize()
	i, err := d.integrity()
	if err == nil {
		info.layout, err = d.layout()
	}
	if err != nil {
		return tableInfo{}, false, &series.Error{Kind: series.InvariantViolation, Op: "write", Table: t.Name, Err: fmt.Errorf("stored definition: %w", err)}
	}
	info.integrity = i
	h.remember(t.Name, info)
	return info, true, nil
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

// statementDDL returns the statements that give a new table of
// IntegrityStatement in layout l its ownership relation, its check
// function and, in the dictionary layout, its dictionaries; the parent's
// triggers follow from triggerDDL.
func (h *Tier) statementDDL(t *series.Table, l layout) []string {
	if l == layoutDictionary {
		return h.dictStatementDDL(t)
	}
	owners := h.ident(ownersName(t))
	cols := []string{"malo_id int8 NOT NULL", "obis_code int8 NOT NULL"}
	excl := []string{"malo_id WITH =", "obis_code WITH ="}
	for _, c := range t.Identity() {
		cols = append(cols, quote(c.Name)+" "+c.ColumnType().String()+" NOT NULL")
		excl = append(excl, quote(c.Name)+" WITH =")
	}
	cols = append(cols, "operator text NOT NULL", "span tstzrange NOT NULL")
	excl = append(excl, "span WITH &&", "operator WITH <>")
	return []string{
		`CREATE TABLE ` + owners + ` (` + strings.Join(cols, ", ") + `, CONSTRAINT ` +
			quote(ownersName(t)+"_one") + ` EXCLUDE USING gist (` + strings.Join(excl, ", ") + `))`,
		`COMMENT ON TABLE ` + owners + ` IS 'MeterStore: the network operator of each span of readings of ` + t.Name + `, one per reading'`,
		h.checkFuncDDL(t, l),
	}
}

// checkFuncDDL returns the CREATE OR REPLACE FUNCTION of t's statement
// check in layout l.
func (h *Tier) checkFuncDDL(t *series.Table, l layout) string {
	return `CREATE OR REPLACE FUNCTION ` + h.ident(checkFunc(t)) + `() RETURNS trigger LANGUAGE plpgsql AS $f$` + h.checkFuncBody(t, l) + `$f$`
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
	case have == h.checkFuncBody(t, l):
		return nil
	}
	if _, err := tx.Exec(ctx, h.checkFuncDDL(t, l)); err != nil {
		return err
	}
	h.log.Info("hot: statement check replaced", "table", t.Name)
	return nil
}

// checkFuncBody returns the body of t's statement check function in
// layout l.
func (h *Tier) checkFuncBody(t *series.Table, l layout) string {
	if l == layoutDictionary {
		return h.dictCheckBody(t)
	}
	return h.rowsCheckBody(t)
}

// rowsCheckBody returns the body of the statement check function of a
// table in the rows layout.
func (h *Tier) rowsCheckBody(t *series.Table) string {
	bucket := bucketExpr(t, `"from"`)
	// Per identity column: the group key, its array, and its element.
	var key, decl, agg, into, unnestArgs, names, elems, on []string
	for i, c := range t.Identity() {
		q := quote(c.Name)
		a := fmt.Sprintf("c%d", i)
		key = append(key, q)
		decl = append(decl, "v_"+a+" "+c.ColumnType().String()+"[];")
		agg = append(agg, "array_agg("+q+")")
		into = append(into, "v_"+a)
		unnestArgs = append(unnestArgs, "v_"+a)
		names = append(names, a)
		elems = append(elems, "u."+a)
		on = append(on, "o."+q+" = u."+a)
	}
	join := func(prefix string, xs []string) string {
		if len(xs) == 0 {
			return ""
		}
		return prefix + strings.Join(xs, ", ")
	}
	and := func(xs []string) string {
		if len(xs) == 0 {
			return ""
		}
		return " AND " + strings.Join(xs, " AND ")
	}
	owners := h.ident(ownersName(t))
	ownerCols := "malo_id, obis_code" + join(", ", key) + ", operator, span"
	// Spans go in in one order, by their columns: two writers whose spans
	// collide then wait for each other at the first collision, and the
	// one that waits is refused once the other commits, instead of each
	// holding a span the other waits for (a deadlock).
	var pos []string
	for i := range 4 + len(key) {
		pos = append(pos, strconv.Itoa(i+1))
	}
	ownerOrder := strings.Join(pos, ", ")
	groups := `SELECT malo_id, obis_code` + join(", ", key) + `, version_scope, min("from") AS lo, max("to") AS hi, count(*) AS n
		FROM new_rows GROUP BY malo_id, obis_code` + join(", ", key) + `, version_scope, version, ` + bucket
	// u is one group: its series, operator and span, and whether it is
	// whole (no gap, so one span stands for its rows).
	// Its arrays are the plpgsql variables v_*, named apart from columns.
	u := `unnest(v_m, v_o` + join(", ", unnestArgs) + `, v_sc, v_lo, v_hi, v_n) AS u(m, o` + join(", ", names) + `, sc, lo, hi, n)`
	whole := wholeCond(t, "u.")
	notOwned := func(span string) string {
		return `NOT EXISTS (SELECT 1 FROM ` + owners + ` o WHERE o.malo_id = u.m::int8 AND o.obis_code = ` + obisKey("u.o") +
			and(on) + ` AND o.operator = split_part(u.sc, ':', 1) AND o.span @> ` + span + `)`
	}
	return `
DECLARE
	v_m text[]; v_o text[]; v_sc text[]; v_lo timestamptz[]; v_hi timestamptz[]; v_n int8[]; ` + strings.Join(decl, " ") + `
	v_bad text; v_check text;
BEGIN
	SELECT array_agg(malo_id), array_agg(obis_code)` + join(", ", agg) + `, array_agg(version_scope), array_agg(lo), array_agg(hi), array_agg(n)
	INTO v_m, v_o` + join(", ", into) + `, v_sc, v_lo, v_hi, v_n
	FROM (` + groups + `) g;
	IF v_m IS NULL THEN
		RETURN NULL;
	END IF;
	SELECT CASE
		WHEN NOT ` + h.ident("malo_valid") + `(u.m) THEN format('malo_id %L: not an 11-digit market location id with a valid check digit', u.m)
		WHEN NOT (` + obisValid("u.o") + `) THEN format('obis_code %L: not a canonical OBIS code', u.o)
		ELSE format('version_scope %L: want <network operator>:<YYYY-MM>', u.sc) END,
		CASE
		WHEN NOT ` + h.ident("malo_valid") + `(u.m) THEN 'malo_id_check'
		WHEN NOT (` + obisValid("u.o") + `) THEN 'obis_code_check'
		ELSE 'version_scope_check' END
	INTO v_bad, v_check FROM ` + u + `
	WHERE NOT (` + h.ident("malo_valid") + `(u.m) AND ` + obisValid("u.o") + ` AND ` + scopeValid("u.sc") + `)
	LIMIT 1;
	IF v_bad IS NOT NULL THEN
		-- Named as the per-row CHECK of the other integrities would be.
		RAISE EXCEPTION 'new row for relation "%" violates check constraint "%": %', TG_TABLE_NAME, v_check, v_bad
			USING ERRCODE = 'check_violation', CONSTRAINT = v_check, TABLE = TG_TABLE_NAME, SCHEMA = TG_TABLE_SCHEMA;
	END IF;
	INSERT INTO ` + owners + ` (` + ownerCols + `)
	SELECT DISTINCT u.m::int8, ` + obisKey("u.o") + join(", ", elems) + `, split_part(u.sc, ':', 1), tstzrange(u.lo, u.hi)
	FROM ` + u + `
	WHERE ` + whole + ` AND ` + notOwned("tstzrange(u.lo, u.hi)") + `
	ORDER BY ` + ownerOrder + `;
	IF EXISTS (SELECT 1 FROM ` + u + ` WHERE NOT (` + whole + `)) THEN
		INSERT INTO ` + owners + ` (` + ownerCols + `)
		SELECT DISTINCT r.malo_id::int8, ` + obisKey("r.obis_code") + join(", ", each("r.", key)) + `, split_part(r.version_scope, ':', 1), tstzrange(r."from", r."to")
		FROM new_rows r
		WHERE (r.malo_id, r.obis_code` + join(", ", each("r.", key)) + `) IN (SELECT u.m, u.o` + join(", ", elems) + ` FROM ` + u + ` WHERE NOT (` + whole + `))
		AND NOT EXISTS (SELECT 1 FROM ` + owners + ` o WHERE o.malo_id = r.malo_id::int8 AND o.obis_code = ` + obisKey("r.obis_code") +
		and(ownOn(key)) + ` AND o.operator = split_part(r.version_scope, ':', 1) AND o.span @> tstzrange(r."from", r."to"))
		ORDER BY ` + ownerOrder + `;
	END IF;
	RETURN NULL;
END
`
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
// t's ownership relation, in tx. Spans never cross a partition boundary.
func (h *Tier) forgetOwners(ctx context.Context, tx pgx.Tx, t *series.Table, from, to time.Time) error {
	_, err := tx.Exec(ctx, `DELETE FROM `+h.ident(ownersName(t))+` WHERE span <@ tstzrange($1, $2)`, from, to)
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

package hot

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/series"
)

// rowsLayout stores every column in the table's rows: every table but the
// new ones of IntegrityStatement, and all from before the dictionary
// layout. hot_tables records it as no layout at all.
type rowsLayout struct{}

func (rowsLayout) String() string { return "" }

// parentDDL returns the CREATE TABLE of the partitioned parent. Partitions
// copy its columns and CHECK constraints with LIKE, which keeps the names
// that ATTACH PARTITION matches constraints by. With IntegrityStatement
// the market location, the OBIS code and the version scope, the same for
// every reading of a series, are checked once per statement instead of
// per row (checkFuncDDL).
func (l rowsLayout) parentDDL(h *Tier, t *series.Table, i series.Integrity) string {
	perRow := i != series.IntegrityStatement
	c := columnDefs(t)
	var cols []string
	add := func(format string, args ...any) { cols = append(cols, fmt.Sprintf(format, args...)) }
	if perRow {
		add(`malo_id text NOT NULL CONSTRAINT malo_id_check CHECK (%s(malo_id))`, h.ident("malo_valid"))
	} else {
		add(`malo_id text NOT NULL`)
	}
	cols = append(cols, c["melo_id"])
	if perRow {
		add(`obis_code text NOT NULL CONSTRAINT obis_code_check CHECK (%s)`, obisValid("obis_code"))
	} else {
		add(`obis_code text NOT NULL`)
	}
	cols = append(cols, c["sparte"], c["from"])
	if t.TimeModel == series.Interval {
		cols = append(cols, c["to"])
	}
	cols = append(cols, c["value"], c["unit"], c["quality"])
	if t.TimeModel == series.Interval {
		cols = append(cols, c["resolution"])
	}
	cols = append(cols, c["version"])
	if perRow {
		cols = append(cols, c["version_scope"])
	} else {
		add(`version_scope text NOT NULL`)
	}
	cols = append(cols, c["recorded_at"], c["balancing_day"], c["subject_id"])
	for _, c := range t.Columns {
		cols = append(cols, columnDDL(c))
	}
	if t.TimeModel == series.Interval {
		cols = append(cols, `CONSTRAINT interval_valid CHECK (`+gridCheck(t)+`)`)
	}
	cols = append(cols, fmt.Sprintf(`CONSTRAINT %s PRIMARY KEY (%s)`, quote(t.Name+"_pkey"), l.primaryKey(t)))
	return `CREATE TABLE ` + h.ident(t.Name) + " (\n\t" + strings.Join(cols, ",\n\t") + "\n) PARTITION BY RANGE (\"from\")"
}

// statementDDL returns the ownership relation of t, keyed by the merge
// key's market location and OBIS code as int8 and its identity columns,
// and the check function.
func (l rowsLayout) statementDDL(h *Tier, t *series.Table) []string {
	return append(rowsOwnersDDL(h, t), h.checkFuncDDL(t, l))
}

// rowsOwnersDDL returns the statements that create the ownership relation
// of t in the rows layout.
func rowsOwnersDDL(h *Tier, t *series.Table) []string {
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
	}
}

// checkBody returns the body of t's statement check function: the new
// rows are grouped by series, version scope, version and bucket, their
// codes checked once per group and their spans recorded per merge key.
func (rowsLayout) checkBody(h *Tier, t *series.Table) string { return rowsCheckBody(h, t, nil) }

// rowsCheckBody returns checkBody's body with, if before is not nil, the
// statement before(u) runs between the codes' check and the spans'
// insert, where u is the unnest expression of the groups (series,
// operator, span and size: columns m, o, c0..., sc, lo, hi, n).
func rowsCheckBody(h *Tier, t *series.Table, before func(u string) string) string {
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
	prelude := ""
	if before != nil {
		prelude = "\n\t" + before(u) + ";"
	}
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
	END IF;` + prelude + `
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

func (rowsLayout) dictNames(*series.Table) []string { return nil }

// primaryKey is the merge key and version.
func (rowsLayout) primaryKey(t *series.Table) string { return keyList(t, true) }

func (rowsLayout) forgetPartition(context.Context, *Tier, pgx.Tx, *series.Table, time.Time, time.Time) error {
	return nil
}

// natural is rel itself: its rows hold the natural columns.
func (rowsLayout) natural(_ *Tier, _ *series.Table, rel string) string { return rel }

func (rowsLayout) shape(t *series.Table) Shape {
	return Shape{Rows: Relation{Columns: readColumns(t), Rows: -1}}
}

func (rowsLayout) mergeKey(t *series.Table) []string { return t.MergeKey() }

// keyFilter is keys: the rows hold the columns they name.
func (rowsLayout) keyFilter(_ *Tier, _ *series.Table, _ Partition, keys []string) []string {
	return keys
}

func (rowsLayout) resolve(context.Context, *Tier, pgx.Tx, *series.Table, *batch) error { return nil }

func (rowsLayout) writeColumns(t *series.Table, quoted bool) []string { return dataColumns(t, quoted) }

func (rowsLayout) writeValues(v []any, t *series.Table, r *staged) []any { return dataValues(v, t, r) }

func (rowsLayout) stageIDs() (cols, defs []string) { return nil, nil }

func (rowsLayout) stageIDValues(v []any, _ *staged) []any { return v }

// sameSeries holds: the merge key says all.
func (rowsLayout) sameSeries(_, _ *staged) bool { return true }

// seriesOn compares the merge key but from.
func (rowsLayout) seriesOn(t *series.Table, p, s string) string {
	on := p + `.malo_id = ` + s + `.malo_id AND ` + p + `.obis_code = ` + s + `.obis_code`
	for _, c := range t.Identity() {
		on += ` AND ` + p + `.` + quote(c.Name) + ` = ` + s + `.` + quote(c.Name)
	}
	return on
}

// runKey sends market location, OBIS code and one array per identity
// column.
func (rowsLayout) runKey(_ *Tier, t *series.Table) (cols, args []string, on, scope string) {
	cols, args = []string{"malo_id", "obis_code"}, []string{"$4::text[]", "$5::text[]"}
	idCols, idArgs, on := identityRuns(t, 6, `p.malo_id = r.malo_id AND p.obis_code = r.obis_code`)
	return append(cols, idCols...), append(args, idArgs...), on, `p.version_scope`
}

func (rowsLayout) runArgs(t *series.Table, rows []staged, rs []versionRun) []any {
	malo, obis := make([]string, len(rs)), make([]string, len(rs))
	args := []any{malo, obis}
	ident := t.Identity()
	extra := make([][]*string, len(ident))
	for j := range extra {
		extra[j] = make([]*string, len(rs))
		args = append(args, extra[j])
	}
	for i, r := range rs {
		s := &rows[r.first]
		malo[i], obis[i] = s.src.MaLo, s.src.OBIS
		for j, c := range ident {
			e := s.src.Extra[c.Name]
			extra[j][i] = &e
		}
	}
	return args
}

func (rowsLayout) columnExpr(*series.Table, string) string { return "" }

func (rowsLayout) storedVersion(p string) string { return numericVersion(p) }

func (rowsLayout) versionParam(v string) string { return v + "::numeric" }

func (l rowsLayout) insertSelect(t *series.Table) []string { return l.writeColumns(t, true) }

func (rowsLayout) naturalSources(*series.Table) map[string]string { return nil }

// numericVersion returns the numeric(20,0) version of stored row p as
// int8, less 2⁶³.
func numericVersion(p string) string { return `(` + p + `.version - ` + versionBias + `)::int8` }

// fromColumn, fromLit, fromExpr and fromTime are those of the layouts
// that store from as it is read.
func (rowsLayout) fromColumn() string                          { return `"from"` }
func (rowsLayout) fromLit(_ *series.Table, v time.Time) string { return timeLit(v) }
func (rowsLayout) fromExpr(_ *series.Table, e string) string   { return e }
func (rowsLayout) fromTime(_ *series.Table, c string) string   { return c }

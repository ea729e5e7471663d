package hot

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/series"
)

// The lean layout.
//
// A new table of IntegrityStatement stores its readings in the lean
// layout, the dictionary layout (layout_dictionary.go) with a narrower
// row: what can be derived is not stored, and what a delivery shares is
// in the attrs dictionary. A reading is its series and attr ids, from,
// version and value; the primary key (series, from, version) is the
// dictionary layout's.
//
//   - to is from plus the table's one fixed resolution: the grid CHECK
//     needs no to, and every reader derives it (leanLayout.columnExpr).
//   - version is an int8 holding version − 2⁶³: every int8 is a version
//     of the declared range 0 to 2⁶⁴−1 and back, in the same order, so
//     it needs no CHECK, and the primary key sorts as by version.
//   - quality, recorded_at and balancing_day join the attrs dictionary's
//     key: they are the same for the readings of a delivery (recorded_at
//     is the transaction's time, which the attrs row takes by default)
//     but for a few distinct qualities and two Berlin days per bucket.
//
// Tables the dictionary layout created keep it (hot_tables records a
// table's layout): a deployment of the code before the lean layout reads
// and writes its tables as they are, and only its new tables are lean.

// leanLayout stores ids of the table's dictionaries, from, version and
// value. hot_tables records it as "lean".
type leanLayout struct{ dictLayout }

func (leanLayout) String() string { return "lean" }

// leanAttrs returns the key columns of t's attrs dictionary in the lean
// layout: the dictionary layout's, quality and balancing day, and the
// transaction's time.
func leanAttrs(t *series.Table) dictionary {
	_, a := dictionaries(t)
	a.cols = append(a.cols, "quality", "balancing_day")
	a.types = append(a.types, "text", "date")
	a.null = append(a.null, false, false)
	a.fixedCols, a.fixedVals = []string{"recorded_at"}, []string{"now()"}
	return a
}

// versionBiased returns the stored form of version v: v − 2⁶³ as int8.
func versionBiased(v uint64) int64 { return int64(v ^ 1<<63) }

// step returns t's one fixed resolution as an SQL interval literal.
func leanStep(t *series.Table) string {
	step, _ := t.AcceptedResolutions()[0].Fixed()
	return fmt.Sprintf(`interval '%d seconds'`, int64(step.Seconds()))
}

// leanTo returns the expression of the end of the interval starting at
// from.
func leanTo(t *series.Table, from string) string { return `(` + from + ` + ` + leanStep(t) + `)` }

// statementDDL is the dictionary layout's but for the attrs dictionary,
// which has quality, recorded_at and balancing_day.
func (l leanLayout) statementDDL(h *Tier, t *series.Table) []string {
	stmts := l.dictLayout.statementDDL(h, t)
	c := columnDefs(t)
	attrs := []string{idColumn, "bucket timestamptz NOT NULL", c["melo_id"], c["sparte"], c["unit"], c["resolution"], c["version_scope"], c["subject_id"],
		c["quality"], c["recorded_at"], c["balancing_day"],
		`CONSTRAINT ` + quote(attrsName(t)+"_key") + ` UNIQUE NULLS NOT DISTINCT (bucket, sparte, unit, resolution, version_scope, melo_id, subject_id, quality, balancing_day, recorded_at)`}
	create := `CREATE TABLE ` + h.ident(attrsName(t)) + ` (`
	for i, s := range stmts {
		if strings.HasPrefix(s, create) {
			stmts[i] = create + strings.Join(attrs, ", ") + `)`
		}
		if strings.HasPrefix(s, `CREATE OR REPLACE FUNCTION `+h.ident(checkFunc(t))) {
			stmts[i] = h.checkFuncDDL(t, l)
		}
	}
	return stmts
}

// parentDDL returns the parent of t: the ids, from and version, whose
// widths keep them aligned without padding, then value and the attribute
// columns.
func (l leanLayout) parentDDL(h *Tier, t *series.Table, _ series.Integrity) string {
	c := columnDefs(t)
	step, _ := t.AcceptedResolutions()[0].Fixed()
	cols := []string{"series int4 NOT NULL", "attr int4 NOT NULL", c["from"], "version int8 NOT NULL", c["value"]}
	for _, col := range t.Columns {
		if !col.Identity {
			cols = append(cols, columnDDL(col))
		}
	}
	cols = append(cols, fmt.Sprintf(`CONSTRAINT interval_valid CHECK (date_bin(interval '%[1]d seconds', "from", timestamptz '1970-01-01 00:00:00+00') = "from")`, int64(step.Seconds())),
		fmt.Sprintf(`CONSTRAINT %s PRIMARY KEY (%s)`, quote(t.Name+"_pkey"), l.primaryKey(t)))
	return `CREATE TABLE ` + h.ident(t.Name) + " (\n\t" + strings.Join(cols, ",\n\t") + "\n) PARTITION BY RANGE (\"from\")"
}

// checkBody is the dictionary layout's, with to derived and versions
// stored as int8.
func (leanLayout) checkBody(h *Tier, t *series.Table) string {
	return dictCheckBody(h, t, checkExprs{
		from:  func(r string) string { return r + `"from"` },
		to:    func(r string) string { return leanTo(t, r+`"from"`) },
		spans: `min("from") AS lo, max("from") AS last, max(` + leanTo(t, `"from"`) + `) AS hi`,
		vtype: "int8",
	})
}

// columnExpr derives to and version.
func (leanLayout) columnExpr(t *series.Table, name string) string {
	switch name {
	case "to":
		return leanTo(t, `"from"`)
	case "version":
		return `(version::numeric + ` + versionBias + `)`
	}
	return ""
}

func (leanLayout) storedVersion(p string) string { return p + `.version` }

func (leanLayout) versionParam(v string) string {
	return `(` + v + `::numeric - ` + versionBias + `)::int8`
}

// insertSelect stores the staged version biased.
func (l leanLayout) insertSelect(t *series.Table) []string {
	cols := l.writeColumns(t, true)
	for i, c := range cols {
		if c == quote("version") {
			cols[i] = `(version - ` + versionBias + `)::int8`
		}
	}
	return cols
}

// natural joins rel's rows to their dictionary rows and derives to and
// version.
func (l leanLayout) natural(h *Tier, t *series.Table, rel string) string {
	cols := []string{"r.series", "s.malo_id", "a.melo_id", "s.obis_code", "a.sparte", `r."from"`, leanTo(t, `r."from"`) + ` AS "to"`, "r.value", "a.unit",
		"a.quality", "a.resolution", `(r.version::numeric + ` + versionBias + `) AS version`, "a.version_scope", "a.recorded_at", "a.balancing_day", "a.subject_id"}
	for _, c := range t.Columns {
		if c.Identity {
			cols = append(cols, "s."+quote(c.Name))
		} else {
			cols = append(cols, "r."+quote(c.Name))
		}
	}
	return `(SELECT ` + strings.Join(cols, ", ") + ` FROM ` + rel + ` r JOIN ` + h.ident(seriesName(t)) + ` s ON s.id = r.series JOIN ` +
		h.ident(attrsName(t)) + ` a ON a.id = r.attr)`
}

// naturalSources returns where series.go's resolved reads find the
// natural columns that are not the rows' own: the dictionaries s and a,
// and the derived ones.
func (leanLayout) naturalSources(t *series.Table) map[string]string {
	src := dictLayout{}.naturalSources(t)
	for _, c := range []string{"quality", "recorded_at", "balancing_day"} {
		src[c] = "a." + c
	}
	src["to"] = leanTo(t, `r."from"`)
	src["version"] = `(r.version::numeric + ` + versionBias + `)`
	return src
}

// shape presents from, to, value and version with the ids, and the
// dictionaries with the rest.
func (leanLayout) shape(t *series.Table) Shape {
	ser, _ := dictionaries(t)
	return dictShape(t, ser, leanAttrs(t))
}

// writeColumns are the ids, from, version and value, then the attribute
// columns.
func (leanLayout) writeColumns(t *series.Table, quoted bool) []string {
	return withAttributes(t, quoted, "series", "attr", "from", "version", "value")
}

func (leanLayout) writeValues(v []any, t *series.Table, r *staged) []any {
	v = append(v, &r.series, &r.attr, &r.from, versionBiased(uint64(r.version)), &r.value)
	for i, c := range t.Columns {
		if !c.Identity {
			v = append(v, r.extra[i])
		}
	}
	return v
}

// resolve looks up the ids of b's rows, with the lean attrs dictionary.
func (leanLayout) resolve(ctx context.Context, h *Tier, tx pgx.Tx, t *series.Table, b *batch) error {
	return h.resolveIDs(ctx, tx, t, b, true)
}

package hot

import (
	"strconv"
	"strings"

	"github.com/meterstore/meterstore/series"
)

// spanSourceColumns returns the columns of t's stored rows that their
// spans are made of, each after prefix: the series, version scope,
// version and interval.
func (h *Tier) spanSourceColumns(t *series.Table, prefix string) string {
	cols := []string{"malo_id", "obis_code"}
	for _, c := range t.Identity() {
		cols = append(cols, quote(c.Name))
	}
	cols = append(cols, "version_scope", "version", `"from"`, `"to"`)
	return strings.Join(each(prefix, cols), ", ")
}

// spansSQL returns the INSERT that records in t's ownership relation the
// spans of the stored rows that source yields (a query of
// spanSourceColumns), grouped as the statement check groups new rows
// (rowsCheckBody): a span per group of a series, version scope, version
// and partition without a gap, a span per row of the others. A span an
// owner row of the same operator covers already is not recorded again.
// Spans go in in the order of their columns, as the check's do, so that
// two transactions whose spans collide wait for each other at the first
// collision rather than deadlock.
func (h *Tier) spansSQL(t *series.Table, source string) string {
	var key []string
	for _, c := range t.Identity() {
		key = append(key, quote(c.Name))
	}
	group := func(p string) string {
		return strings.Join(append([]string{p + "malo_id", p + "obis_code"}, append(each(p, key), p+"version_scope", p+"version")...), ", ")
	}
	ids, on := "", ""
	for _, k := range key {
		ids += ", r." + k
		on += " AND o." + k + " = s." + k
	}
	var pos []string
	for i := range 4 + len(key) {
		pos = append(pos, strconv.Itoa(i+1))
	}
	owners := h.ident(ownersName(t))
	return `WITH src AS MATERIALIZED (` + source + `),
g AS MATERIALIZED (
	SELECT ` + group("") + `, ` + bucketExpr(t, `"from"`) + ` AS b, min("from") AS lo, max("to") AS hi, count(*) AS n
	FROM src GROUP BY ` + group("") + `, b),
s AS (
	SELECT r.malo_id::int8 AS malo_id, ` + obisKey("r.obis_code") + ` AS obis_code` + ids + `, split_part(r.version_scope, ':', 1) AS operator, tstzrange(r.lo, r.hi) AS span
	FROM g r WHERE ` + wholeCond(t, "r.") + `
	UNION
	SELECT r.malo_id::int8, ` + obisKey("r.obis_code") + ids + `, split_part(r.version_scope, ':', 1), tstzrange(r."from", r."to")
	FROM src r JOIN g ON (` + group("g.") + `, g.b) = (` + group("r.") + `, ` + bucketExpr(t, `r."from"`) + `)
	WHERE NOT (` + wholeCond(t, "g.") + `))
INSERT INTO ` + owners + ` (malo_id, obis_code` + strings.ReplaceAll(ids, "r.", "") + `, operator, span)
SELECT * FROM s
WHERE NOT EXISTS (SELECT 1 FROM ` + owners + ` o WHERE o.malo_id = s.malo_id AND o.obis_code = s.obis_code` + on + `
	AND o.operator = s.operator AND o.span @> s.span)
ORDER BY ` + strings.Join(pos, ", ")
}

// upgradingFuncDDL returns the CREATE OR REPLACE FUNCTION of t's statement
// check during an upgrade (upgrade.go): before it records the spans of the
// new rows, it records those of the stored rows of their series in their
// partitions, which the backfill may not have reached, so that a second
// operator is refused whether its row or the first one's came first.
func (h *Tier) upgradingFuncDDL(t *series.Table) string {
	body := rowsCheckBody(h, t, func(u string) string {
		var ids, on []string
		for i, c := range t.Identity() {
			a := "c" + strconv.Itoa(i)
			ids = append(ids, "u."+a)
			on = append(on, "r."+quote(c.Name)+" = k."+a)
		}
		sel := strings.Join(append([]string{"u.m", "u.o"}, ids...), ", ")
		// A range on "from" the primary key index can use, and the exact
		// partition: a month is at most 745 hours in any time zone.
		width := `interval '24 hours'`
		if t.Width == series.Monthly {
			width = `interval '745 hours'`
		}
		cond := `r.malo_id = k.m AND r.obis_code = k.o`
		for _, o := range on {
			cond += " AND " + o
		}
		source := `SELECT ` + h.spanSourceColumns(t, "r.") + `
		FROM (SELECT DISTINCT ` + sel + `, ` + bucketExpr(t, "u.lo") + ` AS b FROM ` + u + `) k
		JOIN ` + h.ident(t.Name) + ` r ON ` + cond + ` AND r."from" >= k.b AND r."from" < k.b + ` + width + ` AND ` + bucketExpr(t, `r."from"`) + ` = k.b`
		return h.spansSQL(t, source)
	})
	return `CREATE OR REPLACE FUNCTION ` + h.ident(checkFunc(t)) + `() RETURNS trigger LANGUAGE plpgsql AS $f$` + body + `$f$`
}

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

// The step layout.
//
// A new table of IntegrityStatement stores its readings in the step
// layout, the lean layout (layout_lean.go) with from stored as an int4:
// the number of steps of the table's one fixed resolution from
// 1970-01-01 00:00 UTC to it. Quarter hours count to 2³¹ in the year
// 63,000, so every start a table holds fits.
//
//   - The primary key is (series, step, version): 16 bytes of key where
//     the lean layout's timestamptz takes 24 with its padding, about 9
//     bytes a reading less in the index. The heap stores version first,
//     then the three int4 and value, without padding.
//   - A step count is on the grid by construction: the grid CHECK of the
//     other layouts has nothing left to refuse and is gone.
//   - The partitions range over step, with bounds in steps; a range on
//     from is translated to one on step (fromLit, fromExpr), which prunes
//     partitions and bounds the primary key scan as before.
//   - Every reader derives from and to from step (fromTime): Read and
//     ReadSeries, Scan and ScanPartition, the write's outcome look-ups.
//
// Tables of the other layouts keep theirs (hot_tables records it).

// stepLayout stores ids of the table's dictionaries, the start as a
// count of steps, version and value. hot_tables records it as "step".
type stepLayout struct{ leanLayout }

func (stepLayout) String() string { return "step" }

// stepSeconds returns the length of t's one fixed resolution in seconds.
func stepSeconds(t *series.Table) int64 {
	step, _ := t.AcceptedResolutions()[0].Fixed()
	return int64(step.Seconds())
}

// stepCeil returns the number of t's steps from the Unix epoch to the
// first start at or after v.
func stepCeil(t *series.Table, v time.Time) int64 {
	d := stepSeconds(t) * 1e6
	us := v.UnixMicro()
	q := us / d
	if us%d > 0 {
		q++
	}
	return q
}

// stepOf returns the step of a start on t's grid, which Write has checked.
func stepOf(t *series.Table, from time.Time) int32 { return int32(stepCeil(t, from)) }

func (stepLayout) fromColumn() string { return `step` }

func (stepLayout) fromLit(t *series.Table, v time.Time) string {
	return strconv.FormatInt(stepCeil(t, v), 10)
}

// fromExpr rounds up in numeric, exact at every microsecond; int8, as a
// bound far outside int4 still compares.
func (stepLayout) fromExpr(t *series.Table, e string) string {
	return fmt.Sprintf(`ceil(extract(epoch FROM %s) / %d)::int8`, e, stepSeconds(t))
}

// fromTime multiplies the step's interval by c in double precision, exact
// for every int4: 900 seconds are 2⁸ × 3,515,625 microseconds.
func (stepLayout) fromTime(t *series.Table, c string) string {
	return fmt.Sprintf(`(timestamptz '1970-01-01 00:00:00+00' + %s * interval '%d seconds')`, c, stepSeconds(t))
}

// timeStep has from and to cross as the stored step, of which a Cursor
// computes them: PostgreSQL's interval arithmetic per row took about a
// quarter of its time sending a partition's rows.
func (stepLayout) timeStep(t *series.Table, name string) (col string, micros, add int64, ok bool) {
	switch name {
	case "from":
		return `step`, stepSeconds(t) * 1e6, 0, true
	case "to":
		return `step`, stepSeconds(t) * 1e6, 1, true
	}
	return "", 0, 0, false
}

// stepTo returns the end of the interval of a row whose step is c.
func stepTo(t *series.Table, c string) string { return layoutStep.fromTime(t, `(`+c+` + 1)`) }

// statementDDL is the lean layout's with the step layout's check.
func (l stepLayout) statementDDL(h *Tier, t *series.Table) []string {
	stmts := l.leanLayout.statementDDL(h, t)
	for i, s := range stmts {
		if strings.HasPrefix(s, `CREATE OR REPLACE FUNCTION `+h.ident(checkFunc(t))) {
			stmts[i] = h.checkFuncDDL(t, l)
		}
	}
	return stmts
}

// parentDDL returns the parent of t: version, then the ids and the step,
// then value and the attribute columns, which leaves no padding.
func (l stepLayout) parentDDL(h *Tier, t *series.Table, _ series.Integrity) string {
	c := columnDefs(t)
	cols := []string{"version int8 NOT NULL", "series int4 NOT NULL", "attr int4 NOT NULL", "step int4 NOT NULL", c["value"]}
	for _, col := range t.Columns {
		if !col.Identity {
			cols = append(cols, columnDDL(col))
		}
	}
	cols = append(cols, fmt.Sprintf(`CONSTRAINT %s PRIMARY KEY (%s)`, quote(t.Name+"_pkey"), l.primaryKey(t)))
	return `CREATE TABLE ` + h.ident(t.Name) + " (\n\t" + strings.Join(cols, ",\n\t") + "\n) PARTITION BY RANGE (step)"
}

func (stepLayout) primaryKey(*series.Table) string { return `series, step, version` }

func (stepLayout) mergeKey(*series.Table) []string { return []string{"series", "step"} }

// checkBody is the dictionary layouts', over steps: the spans of a group
// are converted once, not per row.
func (l stepLayout) checkBody(h *Tier, t *series.Table) string {
	return dictCheckBody(h, t, checkExprs{
		from: func(r string) string { return l.fromTime(t, r+`step`) },
		to:   func(r string) string { return stepTo(t, r+`step`) },
		spans: l.fromTime(t, `min(step)`) + ` AS lo, ` + l.fromTime(t, `max(step)`) + ` AS last, ` +
			stepTo(t, `max(step)`) + ` AS hi`,
		vtype: "int8",
	})
}

// columnExpr derives from, to and version.
func (l stepLayout) columnExpr(t *series.Table, name string) string {
	switch name {
	case "from":
		return l.fromTime(t, `step`)
	case "to":
		return stepTo(t, `step`)
	}
	return l.leanLayout.columnExpr(t, name)
}

// natural joins rel's rows to their dictionary rows and derives from, to
// and version.
func (l stepLayout) natural(h *Tier, t *series.Table, rel string) string {
	cols := []string{"r.series", "s.malo_id", "a.melo_id", "s.obis_code", "a.sparte", l.fromTime(t, `r.step`) + ` AS "from"`, stepTo(t, `r.step`) + ` AS "to"`,
		"r.value", "a.unit", "a.quality", "a.resolution", `(r.version::numeric + ` + versionBias + `) AS version`, "a.version_scope", "a.recorded_at",
		"a.balancing_day", "a.subject_id"}
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

// naturalSources derives from and to from the step.
func (l stepLayout) naturalSources(t *series.Table) map[string]string {
	src := l.leanLayout.naturalSources(t)
	src["from"] = l.fromTime(t, `r.step`)
	src["to"] = stepTo(t, `r.step`)
	return src
}

// writeColumns are the ids, step, version and value, then the attribute
// columns.
func (stepLayout) writeColumns(t *series.Table, quoted bool) []string {
	return withAttributes(t, quoted, "series", "attr", "step", "version", "value")
}

func (stepLayout) writeValues(v []any, t *series.Table, r *staged) []any {
	v = append(v, &r.series, &r.attr, stepOf(t, r.from), versionBiased(uint64(r.version)), &r.value)
	for i, c := range t.Columns {
		if !c.Identity {
			v = append(v, r.extra[i])
		}
	}
	return v
}

// insertSelect stores the staged from as its step and the version biased.
func (l stepLayout) insertSelect(t *series.Table) []string {
	cols := l.writeColumns(t, true)
	for i, c := range cols {
		switch c {
		case quote("step"):
			cols[i] = l.fromExpr(t, `"from"`) + `::int4`
		case quote("version"):
			cols[i] = `(version - ` + versionBias + `)::int8`
		}
	}
	return cols
}

// resolve looks up the ids of b's rows, with the lean attrs dictionary.
func (stepLayout) resolve(ctx context.Context, h *Tier, tx pgx.Tx, t *series.Table, b *batch) error {
	return h.resolveIDs(ctx, tx, t, b, true)
}

package hot

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/series"
)

// A layout is how a table's readings are stored, and what of the tier's
// SQL depends on it: rowsLayout (layout_rows.go) stores every column in
// the table's rows, dictLayout (layout_dictionary.go) stores ids of the
// table's dictionaries in place of what many readings share,
// leanLayout (layout_lean.go) stores less again, and stepLayout
// (layout_step.go) stores a reading's start as a count of steps. What is
// the same in all stays with its caller, which asks the layout for the
// rest.
type layout interface {
	// String returns the layout as hot_tables records it in a table's
	// definition: on-disk format, never changed (see parseLayout).
	String() string

	// parentDDL returns the CREATE TABLE of t's partitioned parent with
	// integrity i.
	parentDDL(h *Tier, t *series.Table, i series.Integrity) string
	// statementDDL returns the statements that give a new table of
	// IntegrityStatement its ownership relation, its check function and
	// the layout's other companions; the triggers follow from triggerDDL.
	statementDDL(h *Tier, t *series.Table) []string
	// checkBody returns the body of t's statement check function.
	checkBody(h *Tier, t *series.Table) string
	// dictNames returns the names of t's dictionaries, series first; none
	// if the layout has none.
	dictNames(t *series.Table) []string
	// primaryKey returns the quoted primary key columns of t.
	primaryKey(t *series.Table) string
	// forgetPartition deletes in tx what t's layout keeps of the dropped
	// partition [from, to) beside it.
	forgetPartition(ctx context.Context, h *Tier, tx pgx.Tx, t *series.Table, from, to time.Time) error

	// natural returns what stands for relation rel (t's parent or one of
	// its partitions) in a FROM clause where its readings are read with
	// their natural columns. The caller adds an alias.
	natural(h *Tier, t *series.Table, rel string) string
	// shape returns how a Read presents t's readings.
	shape(t *series.Table) Shape
	// mergeKey returns the columns of the stored rows that stand for t's
	// merge key, in primary key order.
	mergeKey(t *series.Table) []string
	// keyFilter returns the conditions that select, among the stored
	// rows of partition p, those of the series that keys (conditions on
	// malo_id and obis_code) select.
	keyFilter(h *Tier, t *series.Table, p Partition, keys []string) []string

	// resolve gives the rows of b what the layout stores of them beside
	// their natural columns, in tx.
	resolve(ctx context.Context, h *Tier, tx pgx.Tx, t *series.Table, b *batch) error
	// writeColumns returns the columns a write supplies to t; quoted
	// quotes them for SQL.
	writeColumns(t *series.Table, quoted bool) []string
	// writeValues appends the values of r in writeColumns' order to v.
	writeValues(v []any, t *series.Table, r *staged) []any
	// stageIDs returns the columns, and their definitions, the staging
	// table has beside the natural ones.
	stageIDs() (cols, defs []string)
	// stageIDValues appends the values of r's stageIDs columns to v.
	stageIDValues(v []any, r *staged) []any
	// sameSeries reports whether staged rows a and b, of one series by
	// their merge key, are of one series as stored.
	sameSeries(a, b *staged) bool
	// seriesOn returns the condition that stored row p is of the series
	// of staged row s (both aliases).
	seriesOn(t *series.Table, p, s string) string
	// runKey returns how othersSQL finds the stored rows of a run's
	// series: the columns of the runs' arrays from $4 on, the arrays, the
	// condition joining stored row p to run r, and the expression of p's
	// version scope.
	runKey(h *Tier, t *series.Table) (cols, args []string, on, scope string)
	// runArgs returns the arrays of runKey for the runs rs of rows.
	runArgs(t *series.Table, rows []staged, rs []versionRun) []any

	// columnExpr returns the expression, over a stored row's columns,
	// of the column name of the rows a Read presents (Shape.Rows) if the
	// layout derives it, "" if the rows hold it.
	columnExpr(t *series.Table, name string) string
	// storedVersion returns the version of stored row p as int8, less
	// 2⁶³ (see versionBias).
	storedVersion(p string) string
	// versionParam returns v, a version sent as text, as what compares
	// with the stored version column.
	versionParam(v string) string
	// insertSelect returns the select list, over the staging table, of
	// the columns writeColumns names.
	insertSelect(t *series.Table) []string
	// fromColumn returns the stored column of a reading's start, quoted:
	// the partitions' range and the primary key after the series.
	fromColumn() string
	// fromLit returns the literal of the first stored start at or after
	// v, to compare fromColumn with.
	fromLit(t *series.Table, v time.Time) string
	// fromExpr returns the first stored start at or after the
	// timestamptz expression e, to compare fromColumn with.
	fromExpr(t *series.Table, e string) string
	// fromTime returns the start, as timestamptz, of a row whose
	// fromColumn is the expression c.
	fromTime(t *series.Table, c string) string
	// daySums returns the SELECT of the day sums by series id (see
	// dayStored) of the resolved rows of relation rel of t (a partition)
	// that where selects, "" if the layout leaves them to the engine.
	daySums(h *Tier, t *series.Table, rel string, where []string) string
	// naturalSources returns the expressions of the natural columns that
	// series.go's resolved reads take from elsewhere than the rows r:
	// nil if the rows hold all of them, unqualified.
	naturalSources(t *series.Table) map[string]string
}

// The four layouts.
var (
	layoutRows       layout = rowsLayout{}
	layoutDictionary layout = dictLayout{}
	layoutLean       layout = leanLayout{}
	layoutStep       layout = stepLayout{}
)

// parseLayout returns the layout that hot_tables records as s.
func parseLayout(s string) (layout, error) {
	for _, l := range []layout{layoutRows, layoutDictionary, layoutLean, layoutStep} {
		if l.String() == s {
			return l, nil
		}
	}
	return nil, fmt.Errorf("unknown layout %q", s)
}

// newLayout returns the layout a new table of integrity i gets: the step
// layout for IntegrityStatement, whose one fixed resolution it relies on,
// the rows layout otherwise.
func newLayout(i series.Integrity) layout {
	if i == series.IntegrityStatement {
		return layoutStep
	}
	return layoutRows
}

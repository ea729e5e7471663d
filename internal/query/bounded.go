package query

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/duckdb/duckdb-go/v2"
)

// StepBounded is the step of a result computed and read whole without
// resultTable, in place of StepCreate and StepFirstPage (see bounded).
const StepBounded = "bounded"

// A small result is computed without resultTable, whose creation and
// pages cost a statement of one meter's day more than its rows: DuckDB
// holds it whole, as duckdb-go would any result, bounded to boundedRows
// rows of at most boundedRowBytes each as rowSize measures them, about
// pageBytes in all, which is what a page of resultTable holds at once.
// A result past either bound is computed again into resultTable.
const (
	boundedRows     = 8192
	boundedRowBytes = pageBytes / boundedRows
)

// boundedMark is the message of the error DuckDB raises at a row past
// boundedRowBytes.
const boundedMark = "meterstore: row past the bound of a small result"

// smallSeries is how many series the analysis may bound a statement's
// table to for its result to be taken for small before it first ran.
const smallSeries = 16

// A runMemo is what the runs of one analysed statement learn for the
// next: how many rows its last result had, so that a statement whose
// result was small is computed without resultTable, and one whose
// result was large is not computed twice. The copies of a kept analysis
// share it.
type runMemo struct {
	rows atomic.Int64 // of the last complete result, plus one; 0: none yet

	mu   sync.Mutex
	cols *keptColumns // nil: none kept
}

// A keptColumns is the names and types of a statement's columns as the
// views of the tables scope bound it.
type keptColumns struct {
	names []string
	types []duckdb.TypeInfo
	scope []*Table
}

// columns returns the names and types of the statement's columns kept
// for the views of the tables scope, if any. They are a function of the
// statement's text, default table and parameters, which key the
// analysis, and of the views, which are each table's declaration and
// layout: a Table holds one declaration for its life, and a table opened
// again, or with its columns evolved, is another Table (NewTable). The
// Tables kept are held, so that no other takes one's address.
func (m *runMemo) columns(scope []*Table) (names []string, types []duckdb.TypeInfo, ok bool) {
	if m == nil || scope == nil {
		return nil, nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cols == nil || !slices.Equal(m.cols.scope, scope) {
		return nil, nil, false
	}
	return m.cols.names, m.cols.types, true
}

// keep keeps the names and types of the statement's columns for scope.
func (m *runMemo) keep(scope []*Table, names []string, types []duckdb.TypeInfo) {
	if m == nil || scope == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cols = &keptColumns{names: names, types: types, scope: scope}
}

// small reports whether the statement's result is to be tried as a small
// one: as the last result was, or where none was, as hint says.
func (m *runMemo) small(hint bool) bool {
	if m == nil {
		return hint
	}
	n := m.rows.Load()
	if n == 0 {
		return hint
	}
	return n-1 <= boundedRows
}

// ran records the rows of a complete result.
func (m *runMemo) ran(rows int64) {
	if m != nil {
		m.rows.Store(rows + 1)
	}
}

// smallHint reports whether a's bounds promise a small result before the
// statement ran: it reads a few series of each table it reads, or no
// table. A statement over few series may still return many rows (a
// join, generate_series): the bounds of the result are bounded's own.
func smallHint(a analysis) bool {
	few := func(r []string) bool { return len(r) > 0 && len(r) <= smallSeries }
	if !a.NoReadings && !few(a.MaLo) {
		return false
	}
	for _, r := range a.Tables {
		if !few(r.MaLo) {
			return false
		}
	}
	return true
}

// Small reports whether the statement is a small one: the analysis bounds
// it to a few series of each table it reads, or to no table (smallHint),
// and its last run, if any, gave a small result. A server may run it at
// once beside large ones: it reads little. A statement over many series
// is not small whatever its result, as every meter's total of a day: the
// size of its last result (runMemo) says how it is best computed, not
// how much it reads.
func (st *Statement) Small() bool {
	return smallHint(st.a) && st.a.memo.small(true)
}

// A boundedResult is a small result read whole: its rows, and the types of
// its columns as DuckDB names them.
type boundedResult struct {
	rows  [][]any
	types []string
}

// bounded computes the statement, whose columns names have types, without
// resultTable, the values past maxValueBytes refused as create refuses
// them, and returns its rows. ok is false, with a nil error, where the
// result is not small (past boundedRows rows, or a row past
// boundedRowBytes) or the guarded form does not take the statement: the
// caller computes it into resultTable then. An error is the statement's,
// classified as create's.
func bounded(ctx context.Context, conn *sql.Conn, r runSpec, names []string, types []duckdb.TypeInfo) (res boundedResult, ok bool, err error) {
	size, fixed, varies := rowSize(types)
	if fixed > boundedRowBytes {
		return res, false, nil
	}
	list := guardedColumns(types)
	if varies {
		list = append(list, `CASE WHEN `+size+` > `+strconv.Itoa(boundedRowBytes)+` THEN error('`+boundedMark+`') ELSE 0 END`)
	}
	text := strings.TrimRight(r.sql, " \t\r\n;")
	// The statement on lines of its own, as in create: an error placed in
	// it quotes the caller's line.
	q := `SELECT ` + strings.Join(list, ", ") + ` FROM (` + "\n" + text + "\n" + `) LIMIT ` + strconv.Itoa(boundedRows+1)
	rows, err := conn.QueryContext(ctx, q, r.params...)
	if err != nil {
		if strings.Contains(err.Error(), boundedMark) || ours(err) {
			return res, false, nil
		}
		return res, false, statementError(err, names, r.rendered)
	}
	defer rows.Close()
	cts, err := rows.ColumnTypes()
	if err != nil || len(cts) != len(list) {
		return res, false, errors.Join(errors.New("query: the columns of a small result"), err)
	}
	res.types = make([]string, len(names))
	for i := range res.types {
		res.types[i] = cts[i].DatabaseTypeName()
	}
	vals := make([]any, len(list))
	dest := make([]any, len(vals))
	for i := range dest {
		dest[i] = &vals[i]
	}
	for rows.Next() {
		if len(res.rows) == boundedRows {
			return boundedResult{}, false, nil
		}
		if err := rows.Scan(dest...); err != nil {
			return boundedResult{}, false, classify(err)
		}
		res.rows = append(res.rows, slices.Clone(vals[:len(names)]))
	}
	if err := rows.Err(); err != nil {
		return boundedResult{}, false, classify(err)
	}
	return res, true, nil
}

// statementError returns the error DuckDB computing the statement in a
// guarded form raised, whose first line is the form's: ErrResultTooLarge
// for a value past maxValueBytes, else classified as the statement's.
func statementError(err error, names []string, rendered bool) error {
	err = valueError(err, names)
	if errors.Is(err, ErrResultTooLarge) {
		return err
	}
	return classify(quoteCaller(err, 1, rendered))
}

package query

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/meterstore/meterstore/series"
)

// An Analysis is what the gate found out about a statement. Its Range
// bounds the values of "from" that the statement can read of the relations
// readings and readings_versions, a zero bound being unbounded, and its
// market locations, if any: version resolution is per market location, so
// rows outside it cannot change the statement's answer.
type Analysis struct {
	series.Range
	// NoReadings is true when the statement reads no relation of the
	// default table (readings, readings_versions, completeness, daily):
	// its tiers are not read. Range is the default table's.
	NoReadings bool
	// Tables are the other declared tables whose relations the statement
	// names as <table>.readings, <table>.completeness and so on, with the
	// range of each, bounded by the same rules.
	Tables map[string]series.Range
}

// Extract returns the Analysis of a statement, as Query does; see analyze.
// A statement that is not a single SELECT is refused with an error
// wrapping ErrNotReadOnly.
func Extract(sql string) (Analysis, error) {
	db, err := parser()
	if err != nil {
		return Analysis{}, err
	}
	a, err := analyze(context.Background(), db, sql, "", nil)
	return a.Analysis, err
}

// parser is the DuckDB that Extract parses with, configured as a query's
// and locked down. It lives as long as the process.
var parser = sync.OnceValues(func() (*sql.DB, error) {
	c, err := connector(url.Values{"threads": {"1"}}, "")
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(c)
	for _, stmt := range []string{`SET enable_external_access = false`, `SET lock_configuration = true`} {
		if _, err := db.Exec(stmt); err != nil {
			db.Close()
			return nil, fmt.Errorf("query: lock down the parser: %w", err)
		}
	}
	return db, nil
})

// An analysis is what analyze found out about a statement.
type analysis struct {
	Analysis
	// skipCompleteness: the statement does not read the relation
	// completeness, whose view need not be bound.
	skipCompleteness bool
	// daily names the tables whose relation daily the statement reads,
	// "" for self; completeness those whose completeness it reads.
	daily, completenessIn map[string]bool
	// dailyOnly: of self, the statement reads daily once and nothing else.
	dailyOnly bool
	// skipVersions: it reads no readings_versions either (completeness
	// does), whose view and superseded files need not be bound.
	skipVersions bool
	// sql is the statement to run: the one analyzed or, where it names a
	// relation in the schema system, DuckDB's rendering of it with the
	// catalog spelled out (see qualify).
	sql string
	// rendered is true when sql is that rendering, whose lines and
	// columns are not the caller's.
	rendered bool
	// days is the range of balancing days the statement reads of the
	// relation completeness; see completenessDays.
	days dayRange
	// unqualified is true when it names a relation of the tiers without
	// a table: readings, readings_versions or completeness.
	unqualified bool
	// completenessOf names the other tables whose completeness the
	// statement reads.
	completenessOf []string
	// system is true when it names a relation in the schema system.
	system bool
	// relations is true when it may read an in-memory relation (see
	// Relation): only then are they created in its instance.
	relations bool
	// unbound are the identifiers of the parameters without a value,
	// unused those of the values given for no parameter.
	unbound, unused []string
	// placeholders are the identifiers of all its parameters, in order
	// (see placeholderOrder).
	placeholders []string
	// columns are the names by which the statement may read a column of
	// any relation, lowercase; nil if it may read every column (see
	// columnNames).
	columns map[string]bool
	// point is the shape of a point statement (see Point), nil for
	// every other statement.
	point *pointShape
	// memo is what the statement's runs learn for the next, shared by
	// the copies of a kept analysis; nil for one not kept.
	memo *runMemo
}

// onlySelect is json_serialize_sql's error for a statement other than a
// SELECT.
const onlySelect = "Only SELECT statements can be serialized to json!"

// A querier is a DuckDB connection or database.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// analyze parses text with DuckDB's own parser (json_serialize_sql),
// refuses it unless it is a single SELECT, and returns the range it reads
// of the table self (readings, readings_versions or self.x) and of
// every other table it names (<table>.readings). It is conservative: only
// a table whose relations the statement references exactly once, where
// that reference is a leaf of the FROM of a SELECT without CTE or sample
// whose leaves are joined by inner, outer or cross joins (see plainFrom),
// with no column aliases, is bounded, by the top-level conjuncts of its
// WHERE that compare its "from" with a constant (=, <, <=, >, >=, BETWEEN),
// and to the market locations of a conjunct malo_id = 'x' or malo_id IN
// ('x', ...). A column is the table's if qualified by its alias or name,
// or, when it is the FROM's only leaf, without qualifier. A constant is a
// string literal, optionally cast to DATE, TIMESTAMP or TIMESTAMPTZ; DuckDB
// evaluates it exactly as the comparison does, in the time zone UTC of
// every query's session, so a constant without a zone means UTC. Any other
// conjunct bounds nothing, and any other table is unbounded; so is every
// table of a statement that calls query(...) or query_table(...). A SELECT
// whose FROM is exactly one reference to completeness, and which reads
// nothing else of self, is bounded by its conjuncts on balancing_day
// instead, widened by the lookback (see analysis.completeness). DESCRIBE
// and SHOW get an empty range: they need the relations, not their rows.
func analyze(ctx context.Context, q querier, text, self string, params []any) (analysis, error) {
	var js string
	if err := q.QueryRowContext(ctx, `SELECT CAST(json_serialize_sql(CAST(? AS VARCHAR)) AS VARCHAR)`, text).Scan(&js); err != nil {
		return analysis{}, fmt.Errorf("query: parse: %w", err)
	}
	var doc struct {
		Error        bool              `json:"error"`
		ErrorType    string            `json:"error_type"`
		ErrorMessage string            `json:"error_message"`
		Statements   []json.RawMessage `json:"statements"`
	}
	js, lossy := finite(js)
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		return analysis{}, fmt.Errorf("query: parse: %w", err)
	}
	switch {
	case doc.Error && doc.ErrorType == "parser":
		return analysis{}, fmt.Errorf("%w: %s", ErrInvalidQuery, doc.ErrorMessage)
	case doc.Error && doc.ErrorMessage == onlySelect:
		// Its message speaks of json_serialize_sql's own job, not of
		// why the statement is refused.
		return analysis{}, fmt.Errorf("%w: this statement is not a SELECT", ErrNotReadOnly)
	case doc.Error:
		// A SELECT with a part DuckDB's parser takes and its transformer
		// does not (SIMILAR TO ... ESCAPE: "Custom escape in SIMILAR
		// TO"): DuckDB could not run it either, and says why.
		return analysis{}, fmt.Errorf("%w: DuckDB, which runs every query, cannot take a part of this statement (%s): %s",
			ErrInvalidQuery, doc.ErrorType, doc.ErrorMessage)
	case len(doc.Statements) != 1:
		return analysis{}, fmt.Errorf("%w: %d statements", ErrManyStatements, len(doc.Statements))
	}
	var stmt map[string]any
	d := json.NewDecoder(bytes.NewReader(doc.Statements[0]))
	d.UseNumber()
	if err := d.Decode(&stmt); err != nil {
		return analysis{}, fmt.Errorf("query: parse: %w", err)
	}
	a := analysis{sql: text}
	if a.system = qualify(stmt); a.system {
		if lossy {
			// The rendering would turn the literal into NULL.
			return analysis{}, fmt.Errorf("%w: a statement that names a system relation cannot hold a number literal "+
				"beyond the range of DOUBLE (such as 1e309); write 'infinity'::DOUBLE", ErrInvalidQuery)
		}
		if err := a.render(ctx, q, stmt); err != nil {
			return analysis{}, err
		}
	}
	// After the rendering, which keeps the placeholders as they are.
	a.unbound, a.unused = bindParams(stmt, params)
	a.placeholders = placeholderOrder(stmt)
	node, _ := stmt["node"].(map[string]any)
	var refs references
	refs.walk(node)
	if schema, name := refs.inMain(); schema != "" {
		// It would bind to nothing, and only once the tiers had been
		// read for it.
		table := self
		if table == "" {
			table = "<table>"
		}
		return analysis{}, fmt.Errorf("%w: %s.%s: a table's relations are in the schema of its name, as %s.%s, and the default table's are also found unqualified",
			ErrInvalidQuery, schema, name, table, name)
	}
	a.relations = a.system || refs.others
	// The references of each table, self's under "".
	byTable := map[string]int{}
	for _, r := range refs.readings {
		name := tableOf(r, self)
		byTable[name]++
		a.mark(r, name, self)
	}
	// daily reads its table's readings.
	for _, r := range refs.daily {
		name := tableOf(r, self)
		byTable[name]++
		if a.daily == nil {
			a.daily = map[string]bool{}
		}
		a.daily[name] = true
		a.mark(r, name, self)
	}
	compl := map[string]bool{}
	for _, r := range refs.completeness {
		name := tableOf(r, self)
		if name != "" && !slices.Contains(a.completenessOf, name) {
			a.completenessOf = append(a.completenessOf, name)
		}
		compl[name] = true
		// completeness reads daily.
		if a.daily == nil {
			a.daily = map[string]bool{}
		}
		a.daily[name] = true
		a.mark(r, name, self)
	}
	if len(compl) > 0 {
		a.completenessIn = compl
	}
	for name := range byTable {
		a.read(name)
	}
	for _, name := range a.completenessOf {
		a.read(name)
	}
	if describes(node) {
		a.Range = series.Range{From: epoch, To: epoch}
		for name := range a.Tables {
			a.Tables[name] = a.Range
		}
		return a, nil
	}
	a.skipCompleteness = len(refs.completeness) == 0 && !refs.opaque
	if !refs.opaque && a.skipCompleteness && len(refs.daily) == 0 {
		// daily reads columns of readings the statement need not name.
		a.columns = columnNames(stmt)
	}
	a.skipVersions = !refs.opaque && !slices.ContainsFunc(refs.readings, func(r map[string]any) bool {
		return strings.EqualFold(str(r["table_name"]), "readings_versions")
	})
	if refs.opaque {
		return a, a.opaque(ctx, q, refs, self, byTable[""] > 0 || compl[""])
	}
	for name := range a.Tables {
		if byTable[name] != 1 || compl[name] {
			continue
		}
		r, err := rangeOf(ctx, q, node, name, self)
		if err != nil {
			return analysis{}, err
		}
		a.Tables[name] = r
	}
	if !a.relations && len(refs.readings) == 1 && len(refs.completeness) == 0 && len(refs.daily) == 0 && len(a.unbound) == 0 {
		var err error
		if a.point, err = pointOf(ctx, q, node, self); err != nil {
			return analysis{}, err
		}
	}
	own := byTable[""]
	switch {
	case own == 0 && !compl[""]:
		a.NoReadings = true
		return a, nil
	case own+len(refs.completeness) != 1:
		return a, nil
	case len(refs.completeness) == 1:
		// completeness reads daily alone, which may come from the rollup.
		a.dailyOnly = true
		return a, a.completeness(ctx, q, node, self)
	case a.daily[""]:
		a.dailyOnly = true
		return a, a.dailyRange(ctx, q, node, self)
	}
	r, err := rangeOf(ctx, q, node, "", self)
	a.Range = r
	return a, err
}

// read notes that the statement reads table name, "" for self.
func (a *analysis) read(name string) {
	if name == "" {
		return
	}
	if a.Tables == nil {
		a.Tables = map[string]series.Range{}
	}
	a.Tables[name] = series.Range{}
}

// opaque completes the analysis of a statement that calls query(...) or
// query_table(...), whose relations only DuckDB knows when it runs: every
// table it reads is read whole, with all its relations. The statements of
// query('...') given as string literals are analysed for the tables they
// name; if another call names relations otherwise, self is read, as it is
// if own says the statement names it.
func (a *analysis) opaque(ctx context.Context, q querier, refs references, self string, own bool) error {
	own = own || refs.unknown
	for _, text := range refs.inner {
		in, err := analyze(ctx, q, text, self, nil)
		if err != nil {
			return fmt.Errorf("%w: the statement of query(...): %w", ErrInvalidQuery, err)
		}
		own = own || !in.NoReadings
		for name := range in.Tables {
			a.read(name)
		}
	}
	if a.daily == nil {
		a.daily = map[string]bool{}
	}
	if a.completenessIn == nil {
		a.completenessIn = map[string]bool{}
	}
	for name := range a.Tables {
		a.daily[name], a.completenessIn[name] = true, true
	}
	a.daily[""], a.completenessIn[""] = own, own
	a.NoReadings = !own
	return nil
}

// tables returns the other tables a statement reads, by name.
func (a *analysis) tables() []string {
	out := make([]string, 0, len(a.Tables))
	for name := range a.Tables {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// mark notes whether a reference r to a relation of table name (tableOf's,
// "" for self) names it without a table.
func (a *analysis) mark(r map[string]any, name, self string) {
	if name == "" && (self == "" || !strings.EqualFold(str(r["schema_name"]), self)) {
		a.unqualified = true
	}
}

// rangeOf returns the range of table name that node bounds; see
// tableConstraints.
func rangeOf(ctx context.Context, q querier, node map[string]any, name, self string) (series.Range, error) {
	cs, malo := tableConstraints(node, name, self)
	var (
		r   series.Range
		err error
	)
	if len(cs) > 0 {
		r, err = evaluate(ctx, q, cs)
	}
	r.MaLo = malo
	return r, err
}

// render sets a.sql to DuckDB's rendering of the statement stmt.
func (a *analysis) render(ctx context.Context, q querier, stmt map[string]any) error {
	js, err := json.Marshal(map[string]any{"error": false, "statements": []any{stmt}})
	if err != nil {
		return fmt.Errorf("query: render: %w", err)
	}
	if err := q.QueryRowContext(ctx, `SELECT json_deserialize_sql(CAST(? AS JSON))`, string(js)).Scan(&a.sql); err != nil {
		return fmt.Errorf("query: render: %w", err)
	}
	a.rendered = true
	return nil
}

// finite replaces the tokens NaN, Infinity and -Infinity, which
// json_serialize_sql writes for non-finite literals and JSON does not
// allow, outside strings by null, and reports whether there were any.
func finite(js string) (string, bool) {
	var (
		b        strings.Builder
		inString bool
		lossy    bool
	)
	for i := 0; i < len(js); i++ {
		c := js[i]
		if inString {
			b.WriteByte(c)
			if c == '\\' && i+1 < len(js) {
				i++
				b.WriteByte(js[i])
			} else if c == '"' {
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
		}
		if tok := nonFinite(js[i:]); tok != "" {
			b.WriteString("null")
			i += len(tok) - 1
			lossy = true
			continue
		}
		b.WriteByte(c)
	}
	return b.String(), lossy
}

func nonFinite(s string) string {
	for _, tok := range []string{"-Infinity", "Infinity", "NaN"} {
		if strings.HasPrefix(s, tok) {
			return tok
		}
	}
	return ""
}

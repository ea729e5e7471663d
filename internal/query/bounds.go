package query

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/meterstore/meterstore/series"
)

// The bounds of "from" in a WHERE clause.

// A constraint is a comparison of "from" with a constant: from op x.
type constraint struct {
	op   string // = < <= > >=
	x    string // the constant, as an SQL expression
	args []any  // the values of its placeholders (?), bound parameters
}

// exprs returns the SQL expressions TRY_CAST(x AS typ) of cs, and the
// values of their placeholders in order.
func exprs(cs []constraint, typ string) ([]string, []any) {
	out := make([]string, len(cs))
	var args []any
	for i, c := range cs {
		out[i] = `TRY_CAST(` + c.x + ` AS ` + typ + `)`
		args = append(args, c.args...)
	}
	return out, args
}

// constraintsOn returns the constraints on the column named column of
// the top-level conjuncts of the WHERE of node, and the market locations
// one of them restricts malo_id to, if node is a plain SELECT (see
// plainFrom) from exactly one reference to a relation in main whose name
// isRelation accepts; nil otherwise.
func constraintsOn(node map[string]any, isRelation func(string) bool, column, self string) ([]constraint, []string) {
	leaves, ok := plainFrom(node)
	if !ok || len(leaves) != 1 {
		return nil, nil
	}
	from := leaves[0]
	if from["type"] != "BASE_TABLE" || !isRelation(str(from["table_name"])) || tableOf(from, self) != "" {
		return nil, nil
	}
	return bound(node, leaves, from, column)
}

// tableConstraints returns the constraints on "from" and the market
// locations of the one reference to a readings relation of table name (as
// tableOf has it for self) among the leaves of node's FROM, if node is a
// plain SELECT and that reference is one of its leaves; nil otherwise.
func tableConstraints(node map[string]any, name, self string) ([]constraint, []string) {
	leaves, ok := plainFrom(node)
	if !ok {
		return nil, nil
	}
	for _, l := range leaves {
		if l["type"] == "BASE_TABLE" && isReadings(str(l["table_name"])) && tableOf(l, self) == name {
			return bound(node, leaves, l, "from")
		}
	}
	return nil, nil
}

// plainFrom returns the leaves of the FROM of node if node is a SELECT
// whose top-level WHERE conjuncts bound the rows each leaf contributes: no
// CTE, no sample, and leaves joined by inner, outer and cross joins only
// (regular, natural or cross; not positional, as-of or lateral). A
// comparison of a leaf's column with a constant is false on NULL, so a row
// of the leaf that fails it is in no row of the result, whichever the join,
// and leaving it out changes nothing: an outer join's row extended by NULLs
// instead of it fails the conjunct as well.
func plainFrom(node map[string]any) ([]map[string]any, bool) {
	cte, _ := node["cte_map"].(map[string]any)
	ctes, _ := cte["map"].([]any)
	if node["type"] != "SELECT_NODE" || len(ctes) > 0 || node["sample"] != nil {
		return nil, false
	}
	var (
		leaves []map[string]any
		walk   func(t map[string]any) bool
	)
	walk = func(t map[string]any) bool {
		if t == nil {
			return false
		}
		if t["type"] != "JOIN" {
			leaves = append(leaves, t)
			return true
		}
		switch t["join_type"] {
		case "INNER", "LEFT", "RIGHT", "OUTER":
		default:
			return false
		}
		switch t["ref_type"] {
		case "REGULAR", "NATURAL", "CROSS":
		default:
			return false
		}
		l, _ := t["left"].(map[string]any)
		r, _ := t["right"].(map[string]any)
		return t["sample"] == nil && walk(l) && walk(r)
	}
	from, _ := node["from_table"].(map[string]any)
	if !walk(from) {
		return nil, false
	}
	return leaves, true
}

// bound returns the constraints on column of the base table reference
// from, a leaf of node's FROM among leaves, and the market locations one
// conjunct restricts it to. A reference with a sample, a time travel
// clause, a catalog or column aliases (which could name another column
// like the bounded one) bounds nothing. A column without qualifier is
// from's only when from is the only leaf; a qualifier shared by two leaves
// bounds nothing.
func bound(node map[string]any, leaves []map[string]any, from map[string]any, column string) ([]constraint, []string) {
	aliases, _ := from["column_name_alias"].([]any)
	if from["sample"] != nil || from["at_clause"] != nil || str(from["catalog_name"]) != "" || len(aliases) > 0 {
		return nil, nil
	}
	s := subject{qualifier: qualifierOf(from), bare: len(leaves) == 1}
	for _, l := range leaves {
		if !sameMap(l, from) && strings.EqualFold(qualifierOf(l), s.qualifier) {
			return nil, nil
		}
	}
	var (
		out  []constraint
		malo []string
	)
	for _, c := range conjuncts(node["where_clause"]) {
		out = append(out, comparison(c, s, column)...)
		// One conjunct's set is enough: the others only narrow it.
		if malo == nil {
			malo = maloSet(c, s)
		}
	}
	return out, malo
}

// qualifierOf returns the name that qualifies the columns of a leaf of a
// FROM: its alias, or the name of the table it references.
func qualifierOf(leaf map[string]any) string {
	if a := str(leaf["alias"]); a != "" {
		return a
	}
	return str(leaf["table_name"])
}

// sameMap reports whether a and b are the same map, not just equal ones.
func sameMap(a, b map[string]any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// A subject is the relation whose columns a conjunct may bound: its
// qualifier, and whether a column without one is its too.
type subject struct {
	qualifier string
	bare      bool
}

// maloSet returns the market locations of a conjunct malo_id = 'x', 'x' =
// malo_id or malo_id IN ('x', ...), with string literals only; nil for any
// other conjunct.
func maloSet(e map[string]any, s subject) []string {
	var operands []any
	switch {
	case e["class"] == "COMPARISON" && e["type"] == "COMPARE_EQUAL":
		l, r := e["left"], e["right"]
		if isColumn(r, s, "malo_id") {
			l, r = r, l
		}
		operands = []any{l, r}
	case e["class"] == "OPERATOR" && e["type"] == "COMPARE_IN":
		operands, _ = e["children"].([]any)
	default:
		return nil
	}
	if len(operands) < 2 || !isColumn(operands[0], s, "malo_id") {
		return nil
	}
	set := make([]string, 0, len(operands)-1)
	for _, o := range operands[1:] {
		s, ok := varchar(o)
		if !ok {
			return nil
		}
		set = append(set, s)
	}
	return set
}

// varchar returns the value of a VARCHAR literal, or of a parameter bound
// to a string.
func varchar(v any) (string, bool) {
	e, ok := v.(map[string]any)
	if ok && e["class"] == "PARAMETER" {
		b, _ := e[boundKey].(boundValue)
		s, ok := b.v.(string)
		return s, ok && b.ok
	}
	if !ok || e["class"] != "CONSTANT" {
		return "", false
	}
	val, _ := e["value"].(map[string]any)
	typ, _ := val["type"].(map[string]any)
	s, ok := val["value"].(string)
	return s, ok && val["is_null"] == false && typ["id"] == "VARCHAR"
}

// conjuncts flattens the top-level ANDs of a WHERE clause.
func conjuncts(v any) []map[string]any {
	e, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	if e["class"] == "CONJUNCTION" && e["type"] == "CONJUNCTION_AND" {
		children, _ := e["children"].([]any)
		var out []map[string]any
		for _, c := range children {
			out = append(out, conjuncts(c)...)
		}
		return out
	}
	return []map[string]any{e}
}

var (
	operators = map[string]string{
		"COMPARE_EQUAL": "=", "COMPARE_LESSTHAN": "<", "COMPARE_LESSTHANOREQUALTO": "<=",
		"COMPARE_GREATERTHAN": ">", "COMPARE_GREATERTHANOREQUALTO": ">=",
	}
	flipped = map[string]string{"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
)

// comparison returns the constraints on the column named column of one
// conjunct: column op constant, constant op column, or column BETWEEN a AND b.
func comparison(e map[string]any, s subject, column string) []constraint {
	is := func(v any) bool { return isColumn(v, s, column) }
	switch e["class"] {
	case "COMPARISON":
		op, ok := operators[str(e["type"])]
		if !ok {
			return nil
		}
		l, r := e["left"], e["right"]
		if is(r) {
			l, r, op = r, l, flipped[op]
		}
		if x, args, ok := constant(r); ok && is(l) {
			return []constraint{{op, x, args}}
		}
	case "BETWEEN":
		if e["type"] != "COMPARE_BETWEEN" || !is(e["input"]) {
			return nil
		}
		var out []constraint
		if x, args, ok := constant(e["lower"]); ok {
			out = append(out, constraint{">=", x, args})
		}
		if x, args, ok := constant(e["upper"]); ok {
			out = append(out, constraint{"<=", x, args})
		}
		return out
	}
	return nil
}

// isColumn reports whether v is the column name of s: qualified by its
// qualifier, or without one if s.bare.
func isColumn(v any, s subject, name string) bool {
	e, ok := v.(map[string]any)
	if !ok || e["class"] != "COLUMN_REF" {
		return false
	}
	names, _ := e["column_names"].([]any)
	switch len(names) {
	case 1:
		return s.bare && strings.EqualFold(str(names[0]), name)
	case 2:
		return strings.EqualFold(str(names[0]), s.qualifier) && strings.EqualFold(str(names[1]), name)
	}
	return false
}

// castTypes are the types a constant may be cast to.
var castTypes = map[string]bool{"DATE": true, "TIMESTAMP": true, "TIMESTAMP WITH TIME ZONE": true}

// constant returns v as an SQL expression if it is a string literal, cast
// to castTypes or not. The casts are rendered as TRY_CAST: a cast that
// fails makes the statement fail, and the constraint bounds nothing.
func constant(v any) (string, []any, bool) {
	e, ok := v.(map[string]any)
	if !ok {
		return "", nil, false
	}
	switch e["class"] {
	case "CONSTANT":
		val, _ := e["value"].(map[string]any)
		typ, _ := val["type"].(map[string]any)
		s, ok := val["value"].(string)
		if !ok || val["is_null"] != false || typ["id"] != "VARCHAR" {
			return "", nil, false
		}
		return quote(s), nil, true
	case "PARAMETER":
		// A bound parameter is a constant too, but its value never
		// becomes SQL text: it is bound to a placeholder.
		b, ok := e[boundKey].(boundValue)
		if !ok || !b.ok {
			return "", nil, false
		}
		return "?", []any{b.v}, true
	case "CAST":
		ct, _ := e["cast_type"].(map[string]any)
		id := str(ct["id"])
		if e["try_cast"] != false || !castTypes[id] || ct["type_info"] != nil {
			return "", nil, false
		}
		child, args, ok := constant(e["child"])
		if !ok {
			return "", nil, false
		}
		return `TRY_CAST(` + child + ` AS ` + id + `)`, args, true
	}
	return "", nil, false
}

// Bounds beyond these are ignored: infinities, and instants no tier stores.
var (
	minBound = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	maxBound = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
)

// evaluate casts every constraint's constant to TIMESTAMPTZ, as comparing
// it with "from" does, and intersects the constraints.
func evaluate(ctx context.Context, q querier, cs []constraint) (series.Range, error) {
	r, _, err := bounds(ctx, q, cs)
	return r, err
}

// bounds intersects the constraints cs as evaluate does, and reports
// whether the range is exact: every constant an instant a tier may store,
// none ignored.
func bounds(ctx context.Context, q querier, cs []constraint) (series.Range, bool, error) {
	xs, args := exprs(cs, "TIMESTAMPTZ")
	vals := make([]any, len(cs))
	dest := make([]any, len(cs))
	for i := range cs {
		dest[i] = &vals[i]
	}
	if err := q.QueryRowContext(ctx, `SELECT `+strings.Join(xs, ", "), args...).Scan(dest...); err != nil {
		return series.Range{}, false, fmt.Errorf("query: evaluate the bounds of \"from\": %w", err)
	}
	var r series.Range
	lower := func(t time.Time) {
		if r.From.IsZero() || t.After(r.From) {
			r.From = t
		}
	}
	upper := func(t time.Time) {
		if r.To.IsZero() || t.Before(r.To) {
			r.To = t
		}
	}
	exact := true
	for i, c := range cs {
		t, ok := vals[i].(time.Time)
		if !ok || t.Before(minBound) || !t.Before(maxBound) {
			exact = false
			continue
		}
		t = t.UTC()
		next := t.Add(time.Microsecond)
		switch c.op {
		case "=":
			lower(t)
			upper(next)
		case "<":
			upper(t)
		case "<=":
			upper(next)
		case ">":
			lower(next)
		case ">=":
			lower(t)
		}
	}
	return r, exact, nil
}

package query

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/meterstore/meterstore/series"
)

// The bounds of "from" in a WHERE clause.

// A constraint is a comparison of "from" with a constant: from op x.
type constraint struct {
	op string // = < <= > >=
	x  string // the constant, as an SQL expression
}

// constraints returns the constraints on "from" of the top-level conjuncts
// of the WHERE of node, and the market locations one of them restricts
// malo_id to, if node is a SELECT from exactly one reference to a readings
// relation; nil otherwise.
func constraints(node map[string]any) ([]constraint, []string) {
	return constraintsOn(node, isReadings, "from")
}

// constraintsOn is constraints for the column named column of a relation
// whose name isRelation accepts.
func constraintsOn(node map[string]any, isRelation func(string) bool, column string) ([]constraint, []string) {
	from, _ := node["from_table"].(map[string]any)
	cte, _ := node["cte_map"].(map[string]any)
	ctes, _ := cte["map"].([]any)
	// Column aliases could name another column like the bounded one.
	aliases, _ := from["column_name_alias"].([]any)
	if node["type"] != "SELECT_NODE" || len(ctes) > 0 || node["sample"] != nil || len(aliases) > 0 ||
		from["type"] != "BASE_TABLE" || !isRelation(str(from["table_name"])) ||
		from["sample"] != nil || from["at_clause"] != nil || str(from["catalog_name"]) != "" ||
		str(from["schema_name"]) != "" && !strings.EqualFold(str(from["schema_name"]), "main") {
		return nil, nil
	}
	qualifier := str(from["alias"])
	if qualifier == "" {
		qualifier = str(from["table_name"])
	}
	var (
		out  []constraint
		malo []string
	)
	for _, c := range conjuncts(node["where_clause"]) {
		out = append(out, comparison(c, qualifier, column)...)
		// One conjunct's set is enough: the others only narrow it.
		if malo == nil {
			malo = maloSet(c, qualifier)
		}
	}
	return out, malo
}

// maloSet returns the market locations of a conjunct malo_id = 'x', 'x' =
// malo_id or malo_id IN ('x', ...), with string literals only; nil for any
// other conjunct.
func maloSet(e map[string]any, qualifier string) []string {
	var operands []any
	switch {
	case e["class"] == "COMPARISON" && e["type"] == "COMPARE_EQUAL":
		l, r := e["left"], e["right"]
		if isColumn(r, qualifier, "malo_id") {
			l, r = r, l
		}
		operands = []any{l, r}
	case e["class"] == "OPERATOR" && e["type"] == "COMPARE_IN":
		operands, _ = e["children"].([]any)
	default:
		return nil
	}
	if len(operands) < 2 || !isColumn(operands[0], qualifier, "malo_id") {
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

// varchar returns the value of a VARCHAR literal.
func varchar(v any) (string, bool) {
	e, ok := v.(map[string]any)
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
func comparison(e map[string]any, qualifier, column string) []constraint {
	is := func(v any) bool { return isColumn(v, qualifier, column) }
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
		if x, ok := constant(r); ok && is(l) {
			return []constraint{{op, x}}
		}
	case "BETWEEN":
		if e["type"] != "COMPARE_BETWEEN" || !is(e["input"]) {
			return nil
		}
		var out []constraint
		if x, ok := constant(e["lower"]); ok {
			out = append(out, constraint{">=", x})
		}
		if x, ok := constant(e["upper"]); ok {
			out = append(out, constraint{"<=", x})
		}
		return out
	}
	return nil
}

// isColumn reports whether v is the column name, unqualified or qualified
// by the table's name or alias.
func isColumn(v any, qualifier, name string) bool {
	e, ok := v.(map[string]any)
	if !ok || e["class"] != "COLUMN_REF" {
		return false
	}
	names, _ := e["column_names"].([]any)
	switch len(names) {
	case 1:
		return strings.EqualFold(str(names[0]), name)
	case 2:
		return strings.EqualFold(str(names[0]), qualifier) && strings.EqualFold(str(names[1]), name)
	}
	return false
}

// castTypes are the types a constant may be cast to.
var castTypes = map[string]bool{"DATE": true, "TIMESTAMP": true, "TIMESTAMP WITH TIME ZONE": true}

// constant returns v as an SQL expression if it is a string literal, cast
// to castTypes or not. The casts are rendered as TRY_CAST: a cast that
// fails makes the statement fail, and the constraint bounds nothing.
func constant(v any) (string, bool) {
	e, ok := v.(map[string]any)
	if !ok {
		return "", false
	}
	switch e["class"] {
	case "CONSTANT":
		val, _ := e["value"].(map[string]any)
		typ, _ := val["type"].(map[string]any)
		s, ok := val["value"].(string)
		if !ok || val["is_null"] != false || typ["id"] != "VARCHAR" {
			return "", false
		}
		return quote(s), true
	case "CAST":
		ct, _ := e["cast_type"].(map[string]any)
		id := str(ct["id"])
		if e["try_cast"] != false || !castTypes[id] || ct["type_info"] != nil {
			return "", false
		}
		child, ok := constant(e["child"])
		if !ok {
			return "", false
		}
		return `TRY_CAST(` + child + ` AS ` + id + `)`, true
	}
	return "", false
}

// Bounds beyond these are ignored: infinities, and instants no tier stores.
var (
	minBound = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	maxBound = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
)

// evaluate casts every constraint's constant to TIMESTAMPTZ, as comparing
// it with "from" does, and intersects the constraints.
func evaluate(ctx context.Context, q querier, cs []constraint) (series.Range, error) {
	exprs := make([]string, len(cs))
	vals := make([]any, len(cs))
	dest := make([]any, len(cs))
	for i, c := range cs {
		exprs[i] = `TRY_CAST(` + c.x + ` AS TIMESTAMPTZ)`
		dest[i] = &vals[i]
	}
	if err := q.QueryRowContext(ctx, `SELECT `+strings.Join(exprs, ", ")).Scan(dest...); err != nil {
		return series.Range{}, fmt.Errorf("query: evaluate the bounds of \"from\": %w", err)
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
	for i, c := range cs {
		t, ok := vals[i].(time.Time)
		if !ok || t.Before(minBound) || !t.Before(maxBound) {
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
	return r, nil
}

package query

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// A point statement asks for one series' resolved readings over a range
// of "from": one SELECT of plain columns of one table's readings, its
// WHERE a conjunction of malo_id = 'x', obis_code = 'y', identity columns
// equal to strings and comparisons of "from" with constants, ordered by
// "from" or not at all, with or without a LIMIT. A PointReader answers it
// from the tiers directly, without DuckDB, as the typed read of a series
// does; every other statement, and a point statement without a reader,
// DuckDB runs. Its shape is recognised in the parse tree, conservatively:
// anything the rule does not name makes it an ordinary statement.

// A Point is the read of a point statement: one series of one table, the
// range [From, To) of "from" (a zero bound open), and its identity values
// by column; MaLo and OBIS are in their canonical spelling.
type Point struct {
	Table    string
	MaLo     string
	OBIS     string
	Identity map[string]string
	From, To time.Time
}

// A PointReader reads the resolved readings of a point statement's series
// as the relation readings has them, in the state of the tiers opts
// chooses, and says how it read the table (its TableRead, as a
// statement's header has it). The readings come ordered by from, then by
// the identity columns' values, as the typed read returns them: a LIMIT
// keeps the first.
type PointReader func(ctx context.Context, p Point, opts ReadOptions) ([]series.Reading, TableRead, error)

// StepTyped is the step of Timing.Steps of a point statement answered by
// its PointReader, without DuckDB.
const StepTyped = "typed"

// pointShape is what the parse tree says of a point statement, before
// its table's columns are known.
type pointShape struct {
	table    string   // tableOf's: "" for the default table
	items    []string // the columns selected, "*" for all
	names    []string // their names in the result; "" for a star
	malo     string
	obis     string
	identity map[string]string // column = string, columns other than malo_id and obis_code
	from, to time.Time
	limit    int64 // -1: none
}

// pointNodeKeys are the keys of a SELECT_NODE the rule knows; a node with
// another is no point statement.
var pointNodeKeys = map[string]bool{
	"type": true, "modifiers": true, "cte_map": true, "select_list": true, "from_table": true, "where_clause": true,
	"group_expressions": true, "group_sets": true, "aggregate_handling": true, "having": true, "sample": true, "qualify": true,
}

// pointOf returns the shape of node if it is a point statement, nil if
// not. It evaluates the constants "from" is compared with, as the
// analysis does, and takes none that DuckDB might not cast.
func pointOf(ctx context.Context, q querier, node map[string]any, self string) (*pointShape, error) {
	for k := range node {
		if !pointNodeKeys[k] {
			return nil, nil
		}
	}
	if node["type"] != "SELECT_NODE" || node["aggregate_handling"] != "STANDARD_HANDLING" ||
		node["having"] != nil || node["qualify"] != nil || node["sample"] != nil ||
		!empty(node["group_expressions"]) || !empty(node["group_sets"]) {
		return nil, nil
	}
	leaves, ok := plainFrom(node)
	if !ok || len(leaves) != 1 {
		return nil, nil
	}
	from := leaves[0]
	aliases, _ := from["column_name_alias"].([]any)
	if from["type"] != "BASE_TABLE" || !strings.EqualFold(str(from["table_name"]), "readings") ||
		from["sample"] != nil || from["at_clause"] != nil || str(from["catalog_name"]) != "" || len(aliases) > 0 {
		return nil, nil
	}
	p := &pointShape{table: tableOf(from, self), limit: -1}
	s := subject{qualifier: qualifierOf(from), bare: true}
	if !p.selects(node["select_list"], s) || !p.modified(node["modifiers"], s) {
		return nil, nil
	}
	var cs []constraint
	for _, c := range conjuncts(node["where_clause"]) {
		if fc := comparison(c, s, "from"); len(fc) > 0 {
			cs = append(cs, fc...)
			continue
		}
		if !p.equal(c, s) {
			return nil, nil
		}
	}
	if node["where_clause"] == nil || p.malo == "" || p.obis == "" {
		return nil, nil
	}
	if len(cs) > 0 {
		r, exact, err := bounds(ctx, q, cs)
		if err != nil || !exact {
			// The statement says what is wrong with a bad constant.
			return nil, nil
		}
		if !r.From.IsZero() && !r.To.IsZero() && !r.From.Before(r.To) {
			return nil, nil // nothing to read: DuckDB says what it says of that
		}
		p.from, p.to = r.From, r.To
	}
	return p, nil
}

// empty reports whether v is an empty list or nothing.
func empty(v any) bool {
	l, _ := v.([]any)
	return len(l) == 0
}

// selects takes the select list of a point statement: stars and plain
// columns of s, aliased or not, each name in the result once.
func (p *pointShape) selects(v any, s subject) bool {
	list, _ := v.([]any)
	if len(list) == 0 {
		return false
	}
	for _, x := range list {
		e, _ := x.(map[string]any)
		switch e["class"] {
		case "STAR":
			if str(e["alias"]) != "" || e["expr"] != nil || e["columns"] != false ||
				!empty(e["exclude_list"]) || !empty(e["replace_list"]) || !empty(e["qualified_exclude_list"]) || !empty(e["rename_list"]) {
				return false
			}
			if r := str(e["relation_name"]); r != "" && !strings.EqualFold(r, s.qualifier) {
				return false
			}
			p.items, p.names = append(p.items, "*"), append(p.names, "")
		case "COLUMN_REF":
			col, ok := columnOf(e, s)
			if !ok {
				return false
			}
			name := col
			if a := str(e["alias"]); a != "" {
				name = a
			}
			p.items, p.names = append(p.items, col), append(p.names, name)
		default:
			return false
		}
	}
	return true
}

// columnOf returns the column a column reference of s names, if it is
// spelled as the relation's columns are (lowercase): DuckDB names a
// result's column as the reference spells it.
func columnOf(e map[string]any, s subject) (string, bool) {
	names, _ := e["column_names"].([]any)
	if len(names) == 0 {
		return "", false
	}
	col := str(names[len(names)-1])
	if col != strings.ToLower(col) || !isColumn(e, s, col) {
		return "", false
	}
	return col, true
}

// modified takes the modifiers of a point statement: ORDER BY "from"
// ascending and LIMIT n, a non-negative integer literal without OFFSET.
func (p *pointShape) modified(v any, s subject) bool {
	mods, _ := v.([]any)
	for _, x := range mods {
		m, _ := x.(map[string]any)
		switch m["type"] {
		case "ORDER_MODIFIER":
			orders, _ := m["orders"].([]any)
			if len(orders) != 1 {
				return false
			}
			o, _ := orders[0].(map[string]any)
			if (o["type"] != "ORDER_DEFAULT" && o["type"] != "ASCENDING") || !isColumn(o["expression"], s, "from") {
				return false
			}
		case "LIMIT_MODIFIER":
			if m["offset"] != nil {
				return false
			}
			n, ok := integer(m["limit"])
			if !ok || n < 0 {
				return false
			}
			p.limit = n
		default:
			return false
		}
	}
	// ORDER BY names a column of the select list first: "from" must be
	// the relation's.
	for i, name := range p.names {
		if strings.EqualFold(name, "from") && p.items[i] != "from" {
			return false
		}
	}
	// Without an order, which rows a limit keeps is DuckDB's choice.
	return p.limit < 0 || len(mods) == 2
}

// integer returns the value of an integer literal.
func integer(v any) (int64, bool) {
	e, _ := v.(map[string]any)
	if e["class"] != "CONSTANT" {
		return 0, false
	}
	val, _ := e["value"].(map[string]any)
	typ, _ := val["type"].(map[string]any)
	n, ok := val["value"].(json.Number)
	if !ok || val["is_null"] != false || (typ["id"] != "INTEGER" && typ["id"] != "BIGINT") {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil
}

// equal takes a conjunct column = 'string' of s: malo_id, obis_code or
// another column, which must be an identity column of the table (see
// pointShape.resolve). Each column once; malo_id and obis_code in their
// canonical spelling, which every stored value has: another spelling,
// or a market location whose check digit is wrong, matches no row, and
// DuckDB answers that.
func (p *pointShape) equal(e map[string]any, s subject) bool {
	if e["class"] != "COMPARISON" || e["type"] != "COMPARE_EQUAL" {
		return false
	}
	l, r := e["left"], e["right"]
	if _, ok := varchar(l); ok {
		l, r = r, l
	}
	le, _ := l.(map[string]any)
	if le["class"] != "COLUMN_REF" {
		return false
	}
	col, ok := columnOf(le, s)
	if !ok {
		return false
	}
	x, ok := varchar(r)
	if !ok {
		return false
	}
	switch col {
	case "malo_id":
		m, err := metering.ParseMaLo(x)
		if p.malo != "" || err != nil || m.String() != x {
			return false
		}
		p.malo = x
	case "obis_code":
		o, err := metering.ParseOBIS(x)
		if p.obis != "" || err != nil || o.String() != x {
			return false
		}
		p.obis = x
	default:
		if _, dup := p.identity[col]; dup {
			return false
		}
		if p.identity == nil {
			p.identity = map[string]string{}
		}
		p.identity[col] = x
	}
	return true
}

// resolve returns the Point of shape p over table t named name, and the
// columns of t's readings it selects, in the result's order, with their
// names there; false if t has no such columns or identity columns, or a
// name in the result would be there twice.
func (p *pointShape) resolve(name string, t *Table) (Point, []column, []string, bool) {
	pt := Point{Table: name, MaLo: p.malo, OBIS: p.obis, Identity: p.identity, From: p.from, To: p.to}
	ident := t.table.Identity()
	for col := range p.identity {
		if !slices.ContainsFunc(ident, func(c series.Column) bool { return c.Name == col }) || layoutType(t.layout, col) != "VARCHAR" {
			return Point{}, nil, nil, false
		}
	}
	if p.limit >= 0 && len(p.identity) < len(ident) {
		// Rows of one "from" tie in the order, and which of them a
		// limit keeps is DuckDB's choice.
		return Point{}, nil, nil, false
	}
	var (
		cols  []column
		names []string
		seen  = map[string]bool{}
	)
	for i, item := range p.items {
		var add []column
		if item == "*" {
			add = t.layout.cols
		} else {
			typ := layoutType(t.layout, item)
			if typ == "" {
				return Point{}, nil, nil, false
			}
			add = []column{{name: item, typ: typ}}
		}
		for _, c := range add {
			n := c.name
			if item != "*" {
				n = p.names[i]
			}
			if seen[strings.ToLower(n)] {
				return Point{}, nil, nil, false
			}
			seen[strings.ToLower(n)] = true
			cols, names = append(cols, c), append(names, n)
		}
	}
	return pt, cols, names, true
}

// layoutType returns the DuckDB type of column name of l, "" if it has
// none of that name.
func layoutType(l layout, name string) string {
	for _, c := range l.cols {
		if c.name == name {
			return c.typ
		}
	}
	return ""
}

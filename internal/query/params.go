package query

import (
	"cmp"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Bound parameters. A statement may hold placeholders ($1, ?, $name) whose
// values are bound when it runs; they never become SQL text. The analysis
// sees their values as constants, so that a bound range bounds what the
// tiers are read for as a literal one does: each parameter node of the
// statement's syntax tree carries its value under boundKey.

// boundKey is the key of a parameter node that holds its bound value.
const boundKey = "meterstore_bound"

// A boundValue is the value of one parameter; ok is false for one not bound.
type boundValue struct {
	v  any
	ok bool
}

// bindParams sets the bound value of every parameter node of v from
// params: positional values for $1, $2 (and ?, which DuckDB numbers so),
// sql.NamedArg values for $name. It returns the identifiers of the
// parameters without a value, which bound nothing: a statement prepared
// before its values are known (a Flight SQL prepared statement) has them
// all, and may not run until it gets them; and those of the values no
// parameter takes, which a caller meant for some parameter, so that the
// statement is refused rather than run without them.
func bindParams(v any, params []any) (missing, unused []string) {
	used := map[string]bool{}
	missing = bindNodes(v, params, used)
	for i, p := range params {
		id := strconv.Itoa(i + 1)
		if n, ok := p.(sql.NamedArg); ok {
			id = n.Name
		}
		if !used[id] {
			unused = append(unused, id)
		}
	}
	return missing, unused
}

// bindNodes binds the parameter nodes of v, noting in used the
// identifiers of those that have a value, and returns those without.
func bindNodes(v any, params []any, used map[string]bool) (missing []string) {
	switch v := v.(type) {
	case map[string]any:
		if v["class"] == "PARAMETER" {
			id := str(v["identifier"])
			if val, ok := paramValue(id, params); ok {
				v[boundKey] = boundValue{v: val, ok: true}
				used[id] = true
			} else {
				missing = append(missing, id)
			}
		}
		for _, c := range v {
			missing = append(missing, bindNodes(c, params, used)...)
		}
	case []any:
		for _, c := range v {
			missing = append(missing, bindNodes(c, params, used)...)
		}
	}
	return missing
}

// placeholderOrder returns the identifiers of the parameter nodes of v,
// each once: the positional ones ($1, $2, and ?, which DuckDB numbers so)
// by number, then the named ones by name.
func placeholderOrder(v any) []string {
	var ids []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if v["class"] == "PARAMETER" {
				if id := str(v["identifier"]); !slices.Contains(ids, id) {
					ids = append(ids, id)
				}
			}
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(v)
	slices.SortFunc(ids, func(a, b string) int {
		i, errA := strconv.Atoi(a)
		j, errB := strconv.Atoi(b)
		switch {
		case errA == nil && errB == nil:
			return cmp.Compare(i, j)
		case errA == nil:
			return -1
		case errB == nil:
			return 1
		}
		return strings.Compare(a, b)
	})
	return ids
}

// unbound is the error of a statement run without a value for each of
// its parameters missing.
func unbound(missing []string) error {
	return fmt.Errorf("%w: parameter $%s has no value", ErrInvalidQuery, missing[0])
}

// unusedParams is the error of a statement given values no parameter of
// it takes: the identifiers unused.
func unusedParams(unused []string) error {
	return fmt.Errorf("%w: a value is given for $%s, which the statement does not have: give one value for each of its parameters and no more",
		ErrInvalidQuery, strings.Join(unused, ", $"))
}

// paramValue returns the value of the parameter called id in params.
func paramValue(id string, params []any) (any, bool) {
	for _, p := range params {
		if n, ok := p.(sql.NamedArg); ok && n.Name == id {
			return n.Value, true
		}
	}
	i, err := strconv.Atoi(id)
	if err != nil || i < 1 || i > len(params) {
		return nil, false
	}
	if _, named := params[i-1].(sql.NamedArg); named {
		return nil, false
	}
	return params[i-1], true
}

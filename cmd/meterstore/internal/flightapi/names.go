package flightapi

// How a Flight SQL statement names its MeterStore table. The store answers
// SQL on one table at a time, whose relations are readings,
// readings_versions and the system tables; Flight SQL names relations
// catalog.db_schema.table. So the catalog is "meterstore", a db_schema is
// a MeterStore table, and a statement names its table by qualifying a
// relation with it: power.readings, meterstore.power.readings_versions.
// The first table named is the one the statement runs on, and its
// qualifiers are removed before the store runs it; another table named
// keeps its own, <table>.readings, which the store reads as that table
// (the catalog goes), and the token must be allowed it too. The system
// tables are the same for every table: schema "system" (system.tables),
// answered through any table the token may touch.

import (
	"errors"
	"fmt"
	"strings"
)

// Catalog is the one Flight SQL catalog: the deployment.
const Catalog = "meterstore"

// SystemSchema is the db_schema of the system tables.
const SystemSchema = "system"

// The relations of a MeterStore table.
var relations = []string{"readings", "readings_versions"}

// ErrNaming fails a statement that names no MeterStore table where it
// needs one, or names one that is not declared.
var ErrNaming = errors.New("flightapi: naming")

// resolve returns the table among tables that sql names first (see the
// file's comment) and sql with its qualifiers removed; table is "" when
// sql names none and reads no table's readings, as SELECT * FROM
// system.tables.
// system reports whether sql may read a system table.
func resolve(sql string, tables []string) (table, out string, system bool, err error) {
	chains := identChains(sql)
	var b strings.Builder
	last := 0
	var bare string
	for _, c := range chains {
		k := 0
		if len(c) >= 3 && strings.EqualFold(c[0].name, Catalog) {
			k = 1
		}
		cut := -1 // the byte where the relation's name starts, after the qualifiers cut
		for _, id := range c[:len(c)-1] {
			system = system || strings.EqualFold(id.name, SystemSchema)
		}
		switch {
		case len(c)-k >= 2 && isRelation(c[k+1].name) || len(c)-k >= 3 && strings.EqualFold(c[k+1].name, SystemSchema):
			t, ok := declared(c[k].name, tables)
			if !ok {
				if k == 1 {
					return "", "", false, fmt.Errorf("%w: %q is not a MeterStore table (the tables are %s)", ErrNaming, c[k].name, strings.Join(tables, ", "))
				}
				continue // a column reference such as r.readings, or a typo DuckDB reports
			}
			switch {
			case table != "" && table != t:
				// Another table: the store reads it by its name.
				if k == 1 {
					cut = c[1].start
				}
			default:
				table, cut = t, c[k+1].start
			}
		case k == 1 && strings.EqualFold(c[1].name, SystemSchema):
			cut = c[1].start
		case k == 0 && isRelation(c[0].name):
			bare = c[0].name
		}
		if cut >= 0 {
			b.WriteString(sql[last:c[0].start])
			last = cut
		}
	}
	b.WriteString(sql[last:])
	if table == "" && bare != "" {
		return "", "", false, fmt.Errorf("%w: %s names no MeterStore table: qualify it with the table, as in %s.%s", ErrNaming, bare, example(tables), bare)
	}
	return table, b.String(), system, nil
}

func isRelation(name string) bool {
	for _, r := range relations {
		if strings.EqualFold(name, r) {
			return true
		}
	}
	return false
}

// declared returns the table among tables that name names.
func declared(name string, tables []string) (string, bool) {
	for _, t := range tables {
		if strings.EqualFold(name, t) {
			return t, true
		}
	}
	return "", false
}

func example(tables []string) string {
	if len(tables) == 0 {
		return "<table>"
	}
	return tables[0]
}

// An ident is an identifier in a statement: its bytes and its name,
// unquoted.
type ident struct {
	start, end int
	name       string
}

// identChains returns the dotted identifier chains of sql, a.b.c, outside
// string literals and comments.
func identChains(sql string) [][]ident {
	var (
		chains [][]ident
		cur    []ident
		dot    bool // the last token was a dot after cur
	)
	flush := func() {
		if len(cur) > 0 {
			chains = append(chains, cur)
		}
		cur, dot = nil, false
	}
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case c == '-' && strings.HasPrefix(sql[i:], "--"):
			if j := strings.IndexByte(sql[i:], '\n'); j >= 0 {
				i += j + 1
			} else {
				i = len(sql)
			}
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			if j := strings.Index(sql[i+2:], "*/"); j >= 0 {
				i += j + 4
			} else {
				i = len(sql)
			}
		case c == '\'':
			flush()
			i = skipQuoted(sql, i, '\'')
		case c == '"':
			end := skipQuoted(sql, i, '"')
			name := strings.ReplaceAll(sql[i+1:max(i+1, end-1)], `""`, `"`)
			if len(cur) > 0 && !dot {
				flush()
			}
			cur, dot = append(cur, ident{i, end, name}), false
			i = end
		case c == '$':
			flush()
			i = skipDollar(sql, i)
		case c == '.':
			if len(cur) == 0 || dot {
				flush()
			} else {
				dot = true
			}
			i++
		case isIdentStart(c):
			j := i + 1
			for j < len(sql) && isIdentPart(sql[j]) {
				j++
			}
			if len(cur) > 0 && !dot {
				flush()
			}
			cur, dot = append(cur, ident{i, j, sql[i:j]}), false
			i = j
		default:
			flush()
			i++
		}
	}
	flush()
	return chains
}

// skipQuoted returns the end of the literal quoted by q at sql[i], a
// doubled q standing for itself.
func skipQuoted(sql string, i int, q byte) int {
	for j := i + 1; j < len(sql); j++ {
		if sql[j] == q {
			if j+1 < len(sql) && sql[j+1] == q {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(sql)
}

// skipDollar returns the end of the dollar-quoted string at sql[i]
// ($$...$$, $tag$...$tag$), or of a parameter such as $1.
func skipDollar(sql string, i int) int {
	j := i + 1
	for j < len(sql) && isIdentPart(sql[j]) && sql[j] != '$' {
		j++
	}
	if j >= len(sql) || sql[j] != '$' {
		return j // a parameter
	}
	tag := sql[i : j+1]
	if k := strings.Index(sql[j+1:], tag); k >= 0 {
		return j + 1 + k + len(tag)
	}
	return len(sql)
}

func isIdentStart(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c >= 0x80
}

func isIdentPart(c byte) bool { return isIdentStart(c) || '0' <= c && c <= '9' || c == '$' }

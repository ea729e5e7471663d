package query

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/duckdb/duckdb-go/v2"
)

// The size of a result's values is measured inside DuckDB, from the
// column's type, before a value is handed to Go: that is what bounds one
// value, one row and one page of a result in bytes, whatever the
// statement asks for. The measure of a value approximates the bytes it
// holds in Go's heap as duckdb-go returns it, beyond the interface that
// holds it, as valueSize counts them: a string its bytes, a list its
// elements' interfaces and their values, a struct a map of its fields.

// maxValueBytes bounds one string, blob, bit string or nested value of a
// result. A value is copied whole into Go, and once more by a renderer
// that escapes it; without the bound a single value of repeat('x',
// 1500000000) took 6 GB at a memory limit of 2 GB.
const maxValueBytes = 64 << 20

// maxRowBytes bounds one row of a result, measured as a page is: a row
// is handed over whole, and a page holds one row however large.
const maxRowBytes = 2 * maxValueBytes

// tooLargeMark starts the message of the error DuckDB raises at a value
// past maxValueBytes, followed by the column's index and the value's
// bytes, for valueError to read.
const tooLargeMark = "meterstore: value too large: "

// jsonFactor is how many bytes of Go's heap a byte of JSON text may take:
// duckdb-go unmarshals a JSON value into maps and slices of interfaces,
// and [0,0,0] takes 16 bytes an element for 2 of text.
const jsonFactor = 8

// A measure says how the values of a column (or of a nested field) are
// measured: every value by fixed bytes, or each by the SQL expression
// bytes; bound, if not empty, is the expression maxValueBytes applies to,
// the value's own length where it has one, so that a refusal names the
// bytes the caller knows (a BIT's bytes, not the characters of its text).
type measure struct {
	fixed int64
	bytes string
	bound string
}

// varies reports whether the values are measured one by one.
func (m measure) varies() bool { return m.bytes != "" }

// sql returns the bytes of the value as SQL: 0 for NULL.
func (m measure) sql() string {
	if !m.varies() {
		return strconv.FormatInt(m.fixed, 10)
	}
	return `coalesce(` + m.bytes + `, 0)`
}

// measureOf returns the measure of values of type info in the SQL
// expression x; depth names the variables of nested lambdas apart.
func measureOf(info duckdb.TypeInfo, x string, depth int) measure {
	if info.Alias() == "JSON" {
		return measure{bytes: fmt.Sprintf(`%d * strlen(%s)`, jsonFactor, x), bound: `strlen(` + x + `)`}
	}
	switch info.InternalType() {
	case duckdb.TYPE_BOOLEAN, duckdb.TYPE_TINYINT, duckdb.TYPE_SMALLINT, duckdb.TYPE_INTEGER,
		duckdb.TYPE_UTINYINT, duckdb.TYPE_USMALLINT, duckdb.TYPE_UINTEGER, duckdb.TYPE_FLOAT, duckdb.TYPE_SQLNULL:
		return measure{}
	case duckdb.TYPE_BIGINT, duckdb.TYPE_UBIGINT, duckdb.TYPE_DOUBLE:
		return measure{fixed: 8}
	case duckdb.TYPE_TIMESTAMP, duckdb.TYPE_TIMESTAMP_S, duckdb.TYPE_TIMESTAMP_MS, duckdb.TYPE_TIMESTAMP_NS,
		duckdb.TYPE_TIMESTAMP_TZ, duckdb.TYPE_DATE, duckdb.TYPE_TIME, duckdb.TYPE_TIME_TZ:
		return measure{fixed: 24} // a time.Time
	case duckdb.TYPE_INTERVAL, duckdb.TYPE_UUID:
		return measure{fixed: 16}
	case duckdb.TYPE_HUGEINT, duckdb.TYPE_UHUGEINT:
		return measure{fixed: 48} // a *big.Int of two words
	case duckdb.TYPE_DECIMAL:
		return measure{fixed: 56} // a duckdb.Decimal, its *big.Int of two words
	case duckdb.TYPE_ENUM:
		return measure{bytes: `strlen(CAST(` + x + ` AS VARCHAR))`}
	case duckdb.TYPE_VARCHAR:
		return measure{bytes: `strlen(` + x + `)`, bound: `strlen(` + x + `)`}
	case duckdb.TYPE_BLOB:
		return measure{bytes: `24 + octet_length(` + x + `)`, bound: `octet_length(` + x + `)`}
	case duckdb.TYPE_BIT:
		// Handed over as its text of '0' and '1', a byte a bit.
		return measure{bytes: `bit_length(` + x + `)`, bound: `bit_length(` + x + `) // 8`}
	case duckdb.TYPE_LIST, duckdb.TYPE_ARRAY:
		return listMeasure(info, x, depth)
	case duckdb.TYPE_STRUCT:
		return structMeasure(info.Details().(*duckdb.StructDetails), x, depth)
	case duckdb.TYPE_MAP:
		d := info.Details().(*duckdb.MapDetails)
		keys := elements(d.Key, `map_keys(`+x+`)`, depth)
		vals := elements(d.Value, `map_values(`+x+`)`, depth)
		m := measure{bytes: `48 + 32 * cardinality(` + x + `) + ` + keys + ` + ` + vals}
		m.bound = m.bytes
		return m
	}
	// Any other type (UNION, BIGNUM, GEOMETRY, VARIANT, one of an
	// extension): by the length of its text, which every type has.
	m := measure{bytes: `32 + strlen(CAST(` + x + ` AS VARCHAR))`}
	m.bound = m.bytes
	return m
}

// listMeasure measures a LIST or ARRAY x: a slice of interfaces and the
// values they hold.
func listMeasure(info duckdb.TypeInfo, x string, depth int) measure {
	var child duckdb.TypeInfo
	switch d := info.Details().(type) {
	case *duckdb.ListDetails:
		child = d.Child
	case *duckdb.ArrayDetails:
		child = d.Child
		if c := measureOf(child, "", depth+1); !c.varies() {
			return measure{fixed: 24 + int64(d.Size)*(valueOverhead+c.fixed)}
		}
	}
	m := measure{bytes: fmt.Sprintf(`24 + %d * len(%s) + %s`, valueOverhead, x, elements(child, x, depth))}
	m.bound = m.bytes
	return m
}

// elements returns the SQL of the bytes the values of the list x hold,
// whose type is child, not counting their interfaces.
func elements(child duckdb.TypeInfo, x string, depth int) string {
	e := `e` + strconv.Itoa(depth)
	c := measureOf(child, e, depth+1)
	if !c.varies() {
		return fmt.Sprintf(`%d * len(%s)`, c.fixed, x)
	}
	return fmt.Sprintf(`coalesce(CAST(list_sum(list_transform(%s, lambda %s: %s)) AS BIGINT), 0)`, x, e, c.sql())
}

// structMeasure measures a STRUCT x: a map of its fields' names to
// interfaces holding their values.
func structMeasure(d *duckdb.StructDetails, x string, depth int) measure {
	fixed := int64(48)
	var parts []string
	for _, entry := range d.Entries {
		name := entry.Name()
		fixed += 16 + int64(len(name)) + valueOverhead
		f := measureOf(entry.Info(), `struct_extract(`+x+`, `+quote(name)+`)`, depth)
		if f.varies() {
			parts = append(parts, f.sql())
		} else {
			fixed += f.fixed
		}
	}
	if len(parts) == 0 {
		return measure{fixed: fixed}
	}
	m := measure{bytes: strconv.FormatInt(fixed, 10) + ` + ` + strings.Join(parts, ` + `)}
	m.bound = m.bytes
	return m
}

// rowSize returns the SQL of the bytes a row of the result table holds,
// its columns of types by position, for a page to be measured by, and
// whether rows differ in size at all; without, every row has fixed bytes.
// A value past maxValueBytes raises an error inside DuckDB instead, which
// valueError reads.
func rowSize(types []duckdb.TypeInfo) (sql string, fixed int64, varies bool) {
	fixed = rowOverhead + int64(len(types))*valueOverhead
	var parts []string
	for i, info := range types {
		m := measureOf(info, `#`+strconv.Itoa(i+1), 0)
		if !m.varies() {
			fixed += m.fixed
			continue
		}
		parts = append(parts, guarded(m, i, m.sql()))
	}
	if len(parts) == 0 {
		return "", fixed, false
	}
	return strconv.FormatInt(fixed, 10) + ` + ` + strings.Join(parts, ` + `), fixed, true
}

// guardedColumns returns the select list over the columns of a
// statement, of types, by position: each a value past maxValueBytes may
// be, with an error raised inside DuckDB at such a value instead.
func guardedColumns(types []duckdb.TypeInfo) []string {
	list := make([]string, len(types))
	for i, info := range types {
		col := `#` + strconv.Itoa(i+1)
		list[i] = guarded(measureOf(info, col, 0), i, col)
	}
	return list
}

// guarded returns the SQL of then, or of an error naming column i where
// the value measured by m is past maxValueBytes.
func guarded(m measure, i int, then string) string {
	if m.bound == "" {
		return then
	}
	return fmt.Sprintf(`CASE WHEN %s > %d THEN error('%s%d ' || CAST(%s AS VARCHAR)) ELSE %s END`,
		m.bound, maxValueBytes, tooLargeMark, i, m.bound, then)
}

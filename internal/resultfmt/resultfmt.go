// Package resultfmt renders the values of a query's result as meterstore
// query prints them and meterstore serve answers them: NULL empty, times
// in UTC, a date as a date, a UUID in its canonical form, DuckDB's
// infinite timestamps and dates as infinity, and a repeated column name
// made unique.
package resultfmt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// UniqueNames returns names with each repetition of a name suffixed _2, _3,
// ..., skipping a suffixed name that is a column's own.
func UniqueNames(names []string) []string {
	taken := make(map[string]bool, len(names))
	for _, n := range names {
		taken[n] = true
	}
	seen := make(map[string]bool, len(names))
	out := make([]string, len(names))
	for i, n := range names {
		u := n
		for k := 2; seen[u] || u != n && taken[u]; k++ {
			u = fmt.Sprintf("%s_%d", n, k)
		}
		seen[u] = true
		out[i] = u
	}
	return out
}

// Type returns the DuckDB type name of column i of types, or "" if unknown.
func Type(types []string, i int) string {
	if i < len(types) {
		return types[i]
	}
	return ""
}

// DuckDB's infinite timestamps and dates, as duckdb-go returns them: the
// extreme values of their representations, which no finite one has.
var (
	infinity = []time.Time{
		time.UnixMicro(math.MaxInt64).UTC(),                     // TIMESTAMP, TIMESTAMPTZ
		time.Date(5881580, time.July, 11, 0, 0, 0, 0, time.UTC), // DATE
	}
	minusInfinity = []time.Time{
		time.UnixMicro(-math.MaxInt64).UTC(),
		time.Date(-5877641, time.June, 24, 0, 0, 0, 0, time.UTC),
	}
)

// Text renders a value of DuckDB type typ as SQL would print it: NULL
// empty, times in UTC, a date as a date, a UUID in its canonical form.
func Text(v any, typ string) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case time.Time:
		return string(appendTime(nil, x, typ))
	case []byte:
		if typ == "UUID" && len(x) == 16 {
			return fmt.Sprintf("%x-%x-%x-%x-%x", x[0:4], x[4:6], x[6:8], x[8:10], x[10:16])
		}
	case duckdb.Decimal:
		return decimalText(x)
	case fmt.Stringer:
		return x.String()
	}
	return fmt.Sprint(v)
}

// AppendText appends Text(v, typ) to dst, without a string of its own for
// the values a result has most: text, times, integers and Fixed decimals.
func AppendText(dst []byte, v any, typ string) []byte {
	switch x := v.(type) {
	case nil:
		return dst
	case string:
		return append(dst, x...)
	case time.Time:
		return appendTime(dst, x, typ)
	case int64:
		return strconv.AppendInt(dst, x, 10)
	case int32:
		return strconv.AppendInt(dst, int64(x), 10)
	case Fixed:
		return x.Append(dst)
	}
	return append(dst, Text(v, typ)...)
}

// appendTime appends t's text as a value of DuckDB type typ.
func appendTime(dst []byte, t time.Time, typ string) []byte {
	switch {
	case slices.ContainsFunc(infinity, t.Equal):
		return append(dst, "infinity"...)
	case slices.ContainsFunc(minusInfinity, t.Equal):
		return append(dst, "-infinity"...)
	case typ == "DATE":
		return t.AppendFormat(dst, time.DateOnly)
	case typ == "TIME":
		return t.AppendFormat(dst, "15:04:05.999999")
	}
	return t.UTC().AppendFormat(dst, time.RFC3339Nano)
}

// JSON keeps numbers and booleans as JSON has them and renders the rest,
// decimals among them, as text: a value is never rounded through a float.
func JSON(v any, typ string) any {
	switch v.(type) {
	case nil, bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, string:
		return v
	}
	return Text(v, typ)
}

// Cells renders a row whose columns have the DuckDB types types as Text.
func Cells(row []any, types []string) []string {
	out := make([]string, 0, len(row))
	for i, v := range row {
		out = append(out, Text(v, Type(types, i)))
	}
	return out
}

// A JSONLines renders rows as JSON objects, one a line, their keys in
// column order; a column name given again is suffixed _2, _3, ... (the
// first free one, see UniqueNames), so that no value is lost to a
// repeated name, as in SELECT 1 AS a, 2 AS a.
type JSONLines struct {
	columns, types []string
	keys           [][]byte
	b              bytes.Buffer
}

// NewJSONLines returns the renderer of rows of columns of DuckDB types
// types.
func NewJSONLines(columns, types []string) *JSONLines {
	j := &JSONLines{columns: columns, types: types, keys: make([][]byte, len(columns))}
	for i, name := range UniqueNames(columns) {
		j.keys[i], _ = json.Marshal(name) // a string always marshals
	}
	return j
}

// Line returns row as a JSON object and a newline; it is valid until the
// next call.
func (j *JSONLines) Line(row []any) ([]byte, error) {
	j.b.Reset()
	j.b.WriteByte('{')
	for i, v := range row {
		if i > 0 {
			j.b.WriteByte(',')
		}
		val, err := json.Marshal(JSON(v, Type(j.types, i)))
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", j.columns[i], err)
		}
		j.b.Write(j.keys[i])
		j.b.WriteByte(':')
		j.b.Write(val)
	}
	j.b.WriteString("}\n")
	return j.b.Bytes(), nil
}

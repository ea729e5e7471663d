package resultfmt

import (
	"time"
	"unicode"
	"unicode/utf8"
)

// A CSVRow renders rows as lines of CSV, byte for byte as encoding/csv's
// Writer (comma separated, LF ended) writes their Cells, but appended to
// a buffer the caller keeps: no string, cell slice or writer call per
// row. Its cell buffer serves every row. A CSVRow serves the rows of one
// result, whose types are the same on every row: it keeps each column's
// last field and appends it again where a row repeats the value before
// it in that column, as the rows of one series repeat most of theirs.
type CSVRow struct {
	cell []byte
	// last and field are, per column, the value of the row before and
	// its field as appended; kept is how many columns that row had.
	last  []any
	field [][]byte
	kept  int
}

// Append appends row, whose columns have the DuckDB types types, to dst
// as one CSV line.
func (c *CSVRow) Append(dst []byte, row []any, types []string) []byte {
	if len(c.last) < len(row) {
		c.last = append(c.last, make([]any, len(row)-len(c.last))...)
		c.field = append(c.field, make([][]byte, len(row)-len(c.field))...)
	}
	for i, v := range row {
		if i > 0 {
			dst = append(dst, ',')
		}
		if i < c.kept && equal(c.last[i], v) {
			dst = append(dst, c.field[i]...)
			continue
		}
		c.cell = AppendText(c.cell[:0], v, Type(types, i))
		start := len(dst)
		dst = AppendCSVField(dst, c.cell)
		c.last[i], c.field[i] = v, append(c.field[i][:0], dst[start:]...)
	}
	c.kept = len(row)
	return append(dst, '\n')
}

// equal reports whether a and b are one value of a type whose text is
// its value's alone: those AppendText renders itself. Any other is never
// equal, so that its text is rendered anew.
func equal(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case time.Time:
		// ==, not Equal: the location is part of a date's text.
		y, ok := b.(time.Time)
		return ok && x == y
	case int64:
		y, ok := b.(int64)
		return ok && x == y
	case int32:
		y, ok := b.(int32)
		return ok && x == y
	case Fixed:
		y, ok := b.(Fixed)
		return ok && x == y
	}
	return false
}

// AppendCSVField appends f to dst as one CSV field, quoted where
// encoding/csv's Writer quotes it: a field holding a quote, a comma or a
// line break, the field \. and one starting with a space.
func AppendCSVField[T string | []byte](dst []byte, f T) []byte {
	if !csvNeedsQuotes(f) {
		return append(dst, f...)
	}
	dst = append(dst, '"')
	for i := 0; i < len(f); i++ {
		if f[i] == '"' {
			dst = append(dst, '"')
		}
		dst = append(dst, f[i])
	}
	return append(dst, '"')
}

// csvNeedsQuotes is encoding/csv's Writer.fieldNeedsQuotes with a comma.
func csvNeedsQuotes[T string | []byte](f T) bool {
	if len(f) == 0 {
		return false
	}
	if len(f) == 2 && f[0] == '\\' && f[1] == '.' {
		return true
	}
	for i := 0; i < len(f); i++ {
		switch f[i] {
		case '\n', '\r', '"', ',':
			return true
		}
	}
	var r1 rune
	switch s := any(f).(type) {
	case string:
		r1, _ = utf8.DecodeRuneInString(s)
	case []byte:
		r1, _ = utf8.DecodeRune(s)
	}
	return unicode.IsSpace(r1)
}

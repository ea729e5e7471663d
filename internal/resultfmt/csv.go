package resultfmt

import (
	"unicode"
	"unicode/utf8"
)

// A CSVRow renders rows as lines of CSV, byte for byte as encoding/csv's
// Writer (comma separated, LF ended) writes their Cells, but appended to
// a buffer the caller keeps: no string, cell slice or writer call per
// row. Its cell buffer serves every row.
type CSVRow struct {
	cell []byte
}

// Append appends row, whose columns have the DuckDB types types, to dst
// as one CSV line.
func (c *CSVRow) Append(dst []byte, row []any, types []string) []byte {
	for i, v := range row {
		if i > 0 {
			dst = append(dst, ',')
		}
		c.cell = AppendText(c.cell[:0], v, Type(types, i))
		dst = AppendCSVField(dst, c.cell)
	}
	return append(dst, '\n')
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

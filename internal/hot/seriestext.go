package hot

import (
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// A reusedText is a text column of the series statement that ReadSeries
// takes from the row's raw bytes, not through Scan: where they equal the
// row before's, that row's string is kept. A series' rows repeat their
// texts (market location, OBIS code, units, codes), and a string scanned
// anew for each column of each row was most of a typed read's
// allocations (issue 46).
type reusedText struct {
	col  int
	to   *string  // a column that is never NULL, or
	toP  **string // one that may be
	last *string
}

// reusedTexts are the text columns of a statement ReadSeries takes from
// the raw rows.
type reusedTexts []reusedText

// reuseTexts takes the text columns of the statement fields describes
// out of dst, the destinations of Scan, setting them nil so that Scan
// skips them, and returns them for scan to fill. Only columns of type
// text or varchar, whose bytes are the string in both wire formats, and
// destinations *string or **string are taken.
func reuseTexts(fields []pgconn.FieldDescription, dst []any) reusedTexts {
	var out reusedTexts
	for i, f := range fields {
		if i >= len(dst) || f.DataTypeOID != pgtype.TextOID && f.DataTypeOID != pgtype.VarcharOID {
			continue
		}
		switch d := dst[i].(type) {
		case *string:
			out = append(out, reusedText{col: i, to: d})
		case **string:
			out = append(out, reusedText{col: i, toP: d})
		default:
			continue
		}
		dst[i] = nil
	}
	return out
}

// scan sets the destinations of ts from raw, a row's values as sent.
func (ts reusedTexts) scan(raw [][]byte) error {
	for i := range ts {
		t := &ts[i]
		b := raw[t.col]
		switch {
		case b == nil && t.to != nil:
			return fmt.Errorf("hot: the series statement's column %d is NULL where a text is due", t.col)
		case b == nil:
			*t.toP = nil
			continue
		case t.last == nil || *t.last != string(b):
			s := string(b)
			t.last = &s
		}
		if t.to != nil {
			*t.to = *t.last
		} else {
			*t.toP = t.last
		}
	}
	return nil
}

// presentAt is the column of the series statement that says whether a
// row is a reading (true) or the floor's (false).
const presentAt = 4

// presentOf returns how to read the column presentAt of a row of the
// statement fields describes from its raw values, before the row is
// scanned into the destinations of its kind.
func presentOf(fields []pgconn.FieldDescription) func(raw [][]byte) (bool, error) {
	binary := presentAt < len(fields) && fields[presentAt].Format == pgtype.BinaryFormatCode
	return func(raw [][]byte) (bool, error) {
		if presentAt >= len(raw) || len(raw[presentAt]) != 1 {
			return false, fmt.Errorf("hot: the series statement's row does not say whether it is a reading")
		}
		b := raw[presentAt][0]
		if binary {
			return b == 1, nil
		}
		return b == 't', nil
	}
}

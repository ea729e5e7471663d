package hot

import (
	"github.com/meterstore/meterstore/series"
)

// A Shape is how a Read presents a table's readings: a relation of rows
// and, in the dictionary layout, the dictionaries whose ids the rows carry.
// A column of the table's natural columns (malo_id, obis_code, from, ...)
// is a column of the same name of exactly one of the relations.
type Shape struct {
	Rows Relation
	// Dicts are the dictionaries, each with its id column (ID) and the
	// column of the rows that holds it (Ref).
	Dicts []Dict
	// Series names the column of the rows whose value, with from, stands
	// for the merge key within the read; "" when there is none and the
	// merge key is the natural one.
	Series string
}

// A Relation is a relation of a Read: its columns, and an estimate of its
// rows in the whole table (negative: unknown).
type Relation struct {
	Columns []Column
	Rows    int64
}

// A Dict is a dictionary of a Read's Shape.
type Dict struct {
	Relation
	ID, Ref string
}

// A Column is a column of a Relation and the kind of its values.
type Column struct {
	Name string
	Kind Kind
}

// A Kind says how a Cursor hands over a column's values.
type Kind uint8

// The kinds of values. All but KindText and KindUint64 come as Int64.
const (
	KindText    Kind = iota + 1 // Bytes
	KindInt32                   // int4
	KindInt64                   // int8
	KindTime                    // microseconds since the Unix epoch, UTC
	KindDate                    // days since the Unix epoch
	KindDecimal                 // the unscaled value at scale 6: numeric(18,6)
	KindUint64                  // Uint64: numeric(20,0) from 0 to 2⁶⁴−1
)

// readColumns are the natural columns every reading has, with their
// kinds, in table order; extra columns follow.
func readColumns(t *series.Table) []Column {
	cols := []Column{{"malo_id", KindText}, {"melo_id", KindText}, {"obis_code", KindText}, {"sparte", KindText}, {"from", KindTime}}
	if t.TimeModel == series.Interval {
		cols = append(cols, Column{"to", KindTime})
	}
	cols = append(cols, Column{"value", KindDecimal}, Column{"unit", KindText}, Column{"quality", KindText})
	if t.TimeModel == series.Interval {
		cols = append(cols, Column{"resolution", KindText})
	}
	cols = append(cols, Column{"version", KindUint64}, Column{"version_scope", KindText}, Column{"recorded_at", KindTime},
		Column{"balancing_day", KindDate}, Column{"subject_id", KindText})
	for _, c := range t.Columns {
		cols = append(cols, Column{c.Name, extraKind(c)})
	}
	return cols
}

func extraKind(c series.Column) Kind {
	if c.ColumnType() == series.BigInt {
		return KindInt64
	}
	return KindText
}

package pgwire

import (
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// decodeParams returns the values of a Bind's parameters for
// store.StatementOptions.Params, each decoded by the type the client gave
// it (oids, 0 for none) in its format: a value of no type, or of a text
// type, stays a string, which DuckDB casts where the statement compares it
// with a column, as PostgreSQL casts an unknown literal.
func decodeParams(m *pgtype.Map, oids []uint32, formats []int16, raw [][]byte) ([]any, error) {
	out := make([]any, len(raw))
	for i, b := range raw {
		if b == nil {
			continue
		}
		f, err := formatOf(formats, i, len(raw))
		if err != nil {
			return nil, err
		}
		var oid uint32
		if i < len(oids) {
			oid = oids[i]
		}
		v, err := decodeParam(m, oid, f, b)
		if err != nil {
			return nil, errorf(codeInvalidParamValue, "parameter $%d: %v", i+1, err)
		}
		out[i] = v
	}
	return out, nil
}

// decodeParam decodes one parameter value of type oid in format f.
func decodeParam(m *pgtype.Map, oid uint32, f int16, b []byte) (any, error) {
	scan := func(dst any) error { return m.Scan(oid, f, b, dst) }
	switch oid {
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID:
		var v int64
		return v, scan(&v)
	case pgtype.Float4OID, pgtype.Float8OID:
		var v float64
		return v, scan(&v)
	case pgtype.BoolOID:
		var v bool
		return v, scan(&v)
	case pgtype.NumericOID:
		// As text, exact: DuckDB casts it to the decimal it meets.
		var v pgtype.Numeric
		if err := scan(&v); err != nil {
			return nil, err
		}
		t, err := v.Value()
		return t, err
	case pgtype.TimestamptzOID, pgtype.TimestampOID, pgtype.DateOID:
		var v time.Time
		if err := scan(&v); err != nil {
			return nil, err
		}
		return v.UTC(), nil
	case pgtype.ByteaOID:
		var v []byte
		return v, scan(&v)
	case pgtype.UUIDOID:
		var v pgtype.UUID
		if err := scan(&v); err != nil {
			return nil, err
		}
		t, err := v.Value()
		return t, err
	}
	if f == pgtype.TextFormatCode {
		return string(b), nil
	}
	switch oid {
	case pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID, pgtype.NameOID, pgtype.UnknownOID:
		return string(b), nil
	}
	return nil, errorf(codeFeatureNotSupported, "a binary value of type OID %d is not supported: send it as text", oid)
}

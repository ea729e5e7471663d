package flightapi

import (
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// maxParamSets bounds the parameter rows one prepared statement holds: each
// runs the statement once.
const maxParamSets = 1024

// paramSets reads the parameter batches a client binds to a prepared
// statement: one set of values per row, its columns the placeholders in
// order ($1, $2, ... or ?). A type without a Go value the statement can
// bind is refused.
func paramSets(r flight.MessageReader) ([][]any, error) {
	var sets [][]any
	for r.Next() {
		rec := r.RecordBatch()
		for i := range int(rec.NumRows()) {
			if len(sets) == maxParamSets {
				return nil, status.Errorf(codes.InvalidArgument, "more than %d parameter rows", maxParamSets)
			}
			set := make([]any, rec.NumCols())
			for j, col := range rec.Columns() {
				v, err := paramValue(col, i)
				if err != nil {
					return nil, status.Errorf(codes.InvalidArgument, "parameter %d: %v", j+1, err)
				}
				set[j] = v
			}
			sets = append(sets, set)
		}
	}
	if err := r.Err(); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "the parameters: %v", err)
	}
	return sets, nil
}

// paramValue returns the value in row i of col as a Go value DuckDB binds.
func paramValue(col arrow.Array, i int) (any, error) {
	if col.IsNull(i) {
		return nil, nil
	}
	switch c := col.(type) {
	case *array.Boolean:
		return c.Value(i), nil
	case *array.Int8:
		return int64(c.Value(i)), nil
	case *array.Int16:
		return int64(c.Value(i)), nil
	case *array.Int32:
		return int64(c.Value(i)), nil
	case *array.Int64:
		return c.Value(i), nil
	case *array.Uint8:
		return uint64(c.Value(i)), nil
	case *array.Uint16:
		return uint64(c.Value(i)), nil
	case *array.Uint32:
		return uint64(c.Value(i)), nil
	case *array.Uint64:
		return c.Value(i), nil
	case *array.Float32:
		return float64(c.Value(i)), nil
	case *array.Float64:
		return c.Value(i), nil
	case *array.String:
		return c.Value(i), nil
	case *array.LargeString:
		return c.Value(i), nil
	case *array.Binary:
		return c.Value(i), nil
	case *array.Date32:
		return c.Value(i).ToTime(), nil
	case *array.Timestamp:
		unit := c.DataType().(*arrow.TimestampType).Unit
		return c.Value(i).ToTime(unit).UTC(), nil
	case *array.Decimal128:
		scale := c.DataType().(*arrow.Decimal128Type).Scale
		return c.Value(i).ToString(scale), nil
	case *array.Time64:
		unit := c.DataType().(*arrow.Time64Type).Unit
		return c.Value(i).ToTime(unit).Format(time.TimeOnly + ".999999"), nil
	}
	return nil, fmt.Errorf("type %s is not taken: bind a string, number, boolean, binary, date or timestamp", col.DataType())
}

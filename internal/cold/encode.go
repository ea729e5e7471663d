package cold

import (
	"fmt"
	"iter"
	"strconv"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/internal/rollup"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// An encoder turns readings into Arrow record batches in the layout of a
// cold table's current schema: the declared columns, with the types the
// table has (a widened decimal is written at its wider precision).
type encoder struct {
	decl   *series.Table
	op     string
	schema *arrow.Schema
	cols   []appender
	batch  int
	check  *series.Checker
	// mark decides the superseded column by the next reading: rows come
	// grouped by merge key in ascending version, as an archived window's
	// do. Without mark the column is null: not decided.
	mark       bool
	order      *keyOrder // with mark
	superseded bool      // of the reading being appended
	// sums, if set (with mark), sums every reading that passed the
	// checks, told of its neighbour by the order check; summed is called
	// once every reading passed.
	sums   *rollup.Stream
	summed func()

	// The stream runs on a goroutine of its own (see writeFiles).
	mu   sync.Mutex
	rows int64 // readings the stream encoded, once it ended
	err  error // the error that ended the stream, as the caller should see it
}

// result returns the number of readings encoded and the error that ended
// the stream.
func (e *encoder) result() (int64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rows, e.err
}

func (e *encoder) fail(err error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.err = err
	return err
}

// An appender appends one column of a reading to a builder.
type appender func(b array.Builder, r *series.Reading)

func newEncoder(decl *series.Table, cal *metering.Calendar, op string, have *iceberg.Schema, batch int) (*encoder, error) {
	want := Schema(decl)
	names := make([]string, 0, len(want.Fields()))
	for _, f := range want.Fields() {
		names = append(names, f.Name)
	}
	sc, err := have.Select(true, names...)
	if err != nil {
		return nil, fmt.Errorf("cold: %s: %w", decl.Name, err)
	}
	asc, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("cold: %s: %w", decl.Name, err)
	}
	e := &encoder{decl: decl, op: op, schema: asc, batch: batch, check: series.NewChecker(decl, cal)}
	for _, f := range asc.Fields() {
		a, err := e.appender(f)
		if err != nil {
			return nil, fmt.Errorf("cold: %s: column %q: %w", decl.Name, f.Name, err)
		}
		e.cols = append(e.cols, a)
	}
	return e, nil
}

// appender returns the appender of field f, checking that f has the Arrow
// type the appender builds.
func (e *encoder) appender(f arrow.Field) (appender, error) {
	str := func(get func(*series.Reading) string, optional bool) (appender, error) {
		if f.Type.ID() != arrow.STRING {
			return nil, fmt.Errorf("arrow type %s, want utf8", f.Type)
		}
		return func(b array.Builder, r *series.Reading) {
			if v := get(r); v != "" || !optional {
				b.(*array.StringBuilder).Append(v)
			} else {
				b.AppendNull()
			}
		}, nil
	}
	ts := func(get func(*series.Reading) time.Time) (appender, error) {
		if tt, ok := f.Type.(*arrow.TimestampType); !ok || tt.Unit != arrow.Microsecond {
			return nil, fmt.Errorf("arrow type %s, want timestamp[us]", f.Type)
		}
		return func(b array.Builder, r *series.Reading) {
			b.(*array.TimestampBuilder).Append(arrow.Timestamp(get(r).UnixMicro()))
		}, nil
	}
	dec := func(scale int32, get func(*series.Reading) decimal128.Num) (appender, error) {
		if dt, ok := f.Type.(*arrow.Decimal128Type); !ok || dt.Scale != scale {
			return nil, fmt.Errorf("arrow type %s, want decimal128 with scale %d", f.Type, scale)
		}
		return func(b array.Builder, r *series.Reading) { b.(*array.Decimal128Builder).Append(get(r)) }, nil
	}
	switch f.Name {
	case "malo_id":
		return str(func(r *series.Reading) string { return r.MaLo }, false)
	case "melo_id":
		return str(func(r *series.Reading) string { return r.MeLo }, true)
	case "obis_code":
		return str(func(r *series.Reading) string { return r.OBIS }, false)
	case "sparte":
		return str(func(r *series.Reading) string { return e.decl.CommodityOf(r).String() }, false)
	case "from":
		return ts(func(r *series.Reading) time.Time { return r.From })
	case "to":
		return ts(func(r *series.Reading) time.Time { return r.To })
	case "value":
		return dec(6, func(r *series.Reading) decimal128.Num { return decimal128.FromI64(int64(r.Value)) })
	case "unit":
		return str(func(r *series.Reading) string { return r.Unit.String() }, false)
	case "quality":
		return str(func(r *series.Reading) string { return r.Quality.String() }, false)
	case "resolution":
		return str(func(r *series.Reading) string { return r.Resolution.String() }, false)
	case "version":
		return dec(0, func(r *series.Reading) decimal128.Num { return decimal128.FromU64(r.Version) })
	case "version_scope":
		return str(func(r *series.Reading) string { return r.VersionScope }, false)
	case "recorded_at":
		return ts(func(r *series.Reading) time.Time { return r.RecordedAt })
	case "balancing_day":
		if f.Type.ID() != arrow.DATE32 {
			return nil, fmt.Errorf("arrow type %s, want date32", f.Type)
		}
		return func(b array.Builder, r *series.Reading) {
			d := r.BalancingDay
			b.(*array.Date32Builder).Append(arrow.Date32FromTime(time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC)))
		}, nil
	case "subject_id":
		return str(func(r *series.Reading) string { return r.Subject }, true)
	case series.ColumnSuperseded:
		if f.Type.ID() != arrow.BOOL {
			return nil, fmt.Errorf("arrow type %s, want bool", f.Type)
		}
		return func(b array.Builder, _ *series.Reading) {
			if !e.mark {
				b.AppendNull()
				return
			}
			b.(*array.BooleanBuilder).Append(e.superseded)
		}, nil
	}
	for _, c := range e.decl.Columns {
		if c.Name != f.Name {
			continue
		}
		name := c.Name
		if c.Type != series.BigInt {
			return str(func(r *series.Reading) string { return r.Extra[name] }, true)
		}
		if f.Type.ID() != arrow.INT64 {
			return nil, fmt.Errorf("arrow type %s, want int64", f.Type)
		}
		return func(b array.Builder, r *series.Reading) {
			v, ok := r.Extra[name]
			if !ok {
				b.AppendNull()
				return
			}
			n, _ := strconv.ParseInt(v, 10, 64) // checked by the Checker
			b.(*array.Int64Builder).Append(n)
		}, nil
	}
	return nil, fmt.Errorf("not a declared column")
}

// batches returns the record batches of rows. check, if not nil, may refuse
// a reading with a reason. The first refused reading or source error ends
// the stream; e.err then holds it. Ownership of every yielded batch passes
// to the consumer. With e.mark, a reading is held until the next one tells
// whether it is superseded.
func (e *encoder) batches(rows Rows, check func(*series.Reading) string) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		// The superseded versions are built into batches of their own:
		// they go to files of their own, and a batch of one partition is
		// written without being split (see fanout).
		var builders [2]*array.RecordBuilder
		var counts [2]int
		for i := range builders {
			builders[i] = array.NewRecordBuilder(memory.DefaultAllocator, e.schema)
			builders[i].Reserve(e.batch)
			defer builders[i].Release()
		}
		written := 0
		defer func() {
			e.mu.Lock()
			e.rows = int64(written)
			e.mu.Unlock()
		}()
		emit := func(r *series.Reading, superseded bool) bool {
			e.superseded = superseded
			k := 0
			if superseded {
				k = 1
			}
			b := builders[k]
			for i, a := range e.cols {
				a(b.Field(i), r)
			}
			written++
			if counts[k]++; counts[k] == e.batch {
				counts[k] = 0
				return yield(newBatch(b, e.batch), nil)
			}
			return true
		}
		var (
			prev series.Reading
			held bool
		)
		row := 0
		for r, err := range rows {
			if err != nil {
				yield(nil, e.fail(fmt.Errorf("cold: %s %s: reading the rows: %w", e.op, e.decl.Name, err)))
				return
			}
			// A row the cold tier stores is not corrected later, so every
			// row passes the one definition of a valid reading.
			var d series.Derived
			reason := ""
			if err := e.check.Check(&r, &d); err != nil {
				reason = err.Error()
			} else {
				reason = stateCheck(&r, &d)
			}
			if reason == "" && check != nil {
				reason = check(&r)
			}
			same := false
			if reason == "" && e.mark {
				same, reason = e.order.next(&r)
			}
			if reason != "" {
				yield(nil, e.fail(rowError(series.InvalidInput, e.op, e.decl.Name, row, reason)))
				return
			}
			row++
			if e.sums != nil {
				e.sums.AddNext(&r, same, e.order.sameSeries)
			}
			if !e.mark {
				if !emit(&r, false) {
					return
				}
				continue
			}
			if held && !emit(&prev, same) {
				return
			}
			prev, held = r, true
		}
		if e.summed != nil {
			e.summed()
		}
		if held && !emit(&prev, false) {
			return
		}
		for k, b := range builders {
			if counts[k] > 0 && !yield(b.NewRecordBatch(), nil) {
				return
			}
		}
	}
}

// newBatch returns the batch built in b and makes b ready for the next one
// of n rows: its buffers are allocated at the size the finished batch
// needed, text included, rather than grown by doubling from nothing for
// every batch. On an archival window that growth was a sixth of the
// allocated bytes.
func newBatch(b *array.RecordBuilder, n int) arrow.RecordBatch {
	data := make([]int, len(b.Fields()))
	for i, f := range b.Fields() {
		if s, ok := f.(*array.StringBuilder); ok {
			data[i] = s.DataLen()
		}
	}
	rec := b.NewRecordBatch()
	b.Reserve(n)
	for i, f := range b.Fields() {
		if s, ok := f.(*array.StringBuilder); ok {
			s.ReserveData(data[i])
		}
	}
	return rec
}

package query

import (
	"context"
	"fmt"
	"math/big"
	"strconv"
	"time"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/meterstore/meterstore/series"
)

// A pointRun is how a point statement is answered: its read, the
// columns of readings it selects with their names in the result, its
// limit (-1: none) and the reader.
type pointRun struct {
	p     Point
	u     use
	cols  []column
	names []string
	limit int64
	read  PointReader
}

// pointRead returns how read answers the statement, nil if it is no
// point statement or read is nil.
func (st *Statement) pointRead(read PointReader) *pointRun {
	shape := st.a.point
	if read == nil || shape == nil || len(st.uses) != 1 {
		return nil
	}
	name := shape.table
	if name == "" {
		name = st.self
	}
	u := st.uses[0]
	if name == "" || u.name != name || u.daily || u.completeness {
		return nil
	}
	p, cols, names, ok := shape.resolve(name, u.t)
	if !ok {
		return nil
	}
	return &pointRun{p: p, u: u, cols: cols, names: names, limit: shape.limit, read: read}
}

// streamPoint answers a point statement with its reader, as stream
// would with DuckDB: the same header, and the rows by "from" (then by
// identity values), each value of the Go type duckdb-go gives its column.
func (st *Statement) streamPoint(ctx context.Context, start func(*Header) error, row func([]any) error) error {
	pr := st.point
	h := &Header{Range: st.a.Range, Mode: st.opts.Mode, Columns: pr.names}
	h.Timing.Steps = st.steps.Steps
	h.Timing.Open = time.Since(st.begin)
	begin := time.Now()
	rs, tr, err := pr.read(ctx, pr.p, st.opts)
	if err != nil {
		return fmt.Errorf("query: table %s: %w", pr.u.name, err)
	}
	tr.Name, tr.Range = pr.u.name, pr.u.r
	h.Timing.step(StepTyped, begin)
	h.Timing.Read = time.Since(begin)
	h.Tables = []TableRead{tr}
	h.KnownAt = st.opts.KnownAt
	if st.self != "" && !st.a.NoReadings {
		h.first(tr)
	}
	h.Types = make([]string, len(pr.cols))
	for i, c := range pr.cols {
		h.Types[i] = c.typ
	}
	if err := start(h); err != nil {
		return err
	}
	if pr.limit >= 0 && int64(len(rs)) > pr.limit {
		rs = rs[:pr.limit]
	}
	vals := make([]any, len(pr.cols))
	for i := range rs {
		if err := ctx.Err(); err != nil {
			return err
		}
		for j, c := range pr.cols {
			if vals[j], err = readingValue(pr.u.t.table, c, &rs[i]); err != nil {
				return err
			}
		}
		if err := row(vals); err != nil {
			return err
		}
	}
	return nil
}

// readingValue returns the value of column c of r as duckdb-go returns
// it from the relation readings of table t: a string, time.Time in UTC,
// duckdb.Decimal, int64, or nil for NULL.
func readingValue(t *series.Table, c column, r *series.Reading) (any, error) {
	text := func(s string, nullable bool) any {
		if s == "" && nullable {
			return nil
		}
		return s
	}
	switch c.name {
	case "malo_id":
		return r.MaLo, nil
	case "melo_id":
		return text(r.MeLo, true), nil
	case "obis_code":
		return r.OBIS, nil
	case "sparte":
		return t.CommodityOf(r).String(), nil
	case "from":
		return r.From.UTC(), nil
	case "to":
		return r.To.UTC(), nil
	case "value":
		return decimal(c.typ, big.NewInt(int64(r.Value)))
	case "unit":
		return r.Unit.String(), nil
	case "quality":
		return r.Quality.String(), nil
	case "resolution":
		return r.Resolution.String(), nil
	case "version":
		return decimal(c.typ, new(big.Int).SetUint64(r.Version))
	case "version_scope":
		return r.VersionScope, nil
	case "recorded_at":
		return r.RecordedAt.UTC(), nil
	case "balancing_day":
		d := r.BalancingDay
		return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC), nil
	case "subject_id":
		return text(r.Subject, true), nil
	}
	v, ok := r.Extra[c.name]
	switch {
	case !ok:
		return nil, nil
	case c.typ == "BIGINT":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("query: column %s: %w", c.name, err)
		}
		return n, nil
	}
	return v, nil
}

// decimal returns the unscaled value v as duckdb-go returns a value of
// DuckDB type typ, DECIMAL(width,scale).
func decimal(typ string, v *big.Int) (any, error) {
	var width, scale uint8
	if _, err := fmt.Sscanf(typ, "DECIMAL(%d,%d)", &width, &scale); err != nil {
		return nil, fmt.Errorf("query: type %s: not a decimal: %w", typ, err)
	}
	return duckdb.Decimal{Width: width, Scale: scale, Value: v}, nil
}

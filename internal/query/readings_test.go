package query

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strconv"
	"time"

	"github.com/meterstore/meterstore/series"
)

// readingRows are in-memory readings as a HotRead: a relation of rows
// with the layout's columns, in one unit, read as they were when it
// opened. The tests' sources serve their hot tier so.
type readingRows struct {
	shape HotShape
	gets  []func(*series.Table, *series.Reading) (driver.Value, error)
	tab   *series.Table
	rows  []series.Reading
	moved int64
}

func newReadingRows(tab *series.Table, rows []series.Reading) (*readingRows, error) {
	l, err := layoutOf(tab)
	if err != nil {
		return nil, err
	}
	r := &readingRows{tab: tab, rows: rows, shape: HotShape{Rows: HotRelation{Rows: int64(len(rows))}}}
	for _, c := range l.cols {
		var k HotKind
		switch {
		case c.typ == "VARCHAR":
			k = KindText
		case c.typ == "TIMESTAMPTZ":
			k = KindTime
		case c.typ == "DATE":
			k = KindDate
		case c.typ == "BIGINT":
			k = KindInt64
		case c.typ == "DECIMAL(18,6)":
			k = KindDecimal
		case c.typ == "DECIMAL(20,0)":
			k = KindUint64
		default:
			return nil, fmt.Errorf("column %s: no kind for %s", c.name, c.typ)
		}
		get, err := getter(tab, c.name)
		if err != nil {
			return nil, err
		}
		r.shape.Rows.Columns = append(r.shape.Rows.Columns, HotColumn{Name: c.name, Kind: k})
		r.gets = append(r.gets, get)
	}
	return r, nil
}

func (r *readingRows) Shape() HotShape   { return r.shape }
func (r *readingRows) Units(rel int) int { return 1 }
func (r *readingRows) Close() error      { return nil }

func (r *readingRows) Moved() (int64, int64, time.Duration) { return r.moved, 0, 0 }

func (r *readingRows) Scan(ctx context.Context, rel, unit int, cols []int, winners bool) (HotCursor, error) {
	if rel != 0 || unit != 0 || winners {
		return nil, fmt.Errorf("no unit %d of relation %d", unit, rel)
	}
	return &readingCursor{r: r, cols: cols, vals: make([]driver.Value, len(cols)), row: -1}, nil
}

type readingCursor struct {
	r    *readingRows
	cols []int
	vals []driver.Value
	row  int
	err  error
}

func (c *readingCursor) Next(ctx context.Context) bool {
	if c.err != nil || c.row+1 >= len(c.r.rows) {
		return false
	}
	c.row++
	c.r.moved++
	for i, col := range c.cols {
		v, err := c.r.gets[col](c.r.tab, &c.r.rows[c.row])
		if err != nil {
			c.err = err
			return false
		}
		c.vals[i] = v
	}
	return true
}

func (c *readingCursor) Null(i int) bool { return c.vals[i] == nil }

func (c *readingCursor) Int64(i int) int64 {
	switch v := c.vals[i].(type) {
	case int64:
		return v
	case time.Time:
		if c.r.shape.Rows.Columns[c.cols[i]].Kind == KindDate {
			return v.Unix() / 86400
		}
		return v.UnixMicro()
	}
	panic(fmt.Sprintf("no int64 in %T", c.vals[i]))
}

func (c *readingCursor) Uint64(i int) uint64 { return c.vals[i].(uint64) }
func (c *readingCursor) Bytes(i int) []byte  { return []byte(c.vals[i].(string)) }
func (c *readingCursor) Err() error          { return c.err }
func (c *readingCursor) Close() error        { return nil }

// getter returns the function that reads a column's value off a reading,
// as the appender takes it. Empty optional strings are NULL, as in the
// cold tier.
func getter(t *series.Table, name string) (func(*series.Table, *series.Reading) (driver.Value, error), error) {
	str := func(get func(r *series.Reading) string) func(*series.Table, *series.Reading) (driver.Value, error) {
		return func(_ *series.Table, r *series.Reading) (driver.Value, error) { return get(r), nil }
	}
	opt := func(get func(r *series.Reading) string) func(*series.Table, *series.Reading) (driver.Value, error) {
		return func(_ *series.Table, r *series.Reading) (driver.Value, error) {
			if v := get(r); v != "" {
				return v, nil
			}
			return nil, nil
		}
	}
	ts := func(get func(r *series.Reading) time.Time) func(*series.Table, *series.Reading) (driver.Value, error) {
		return func(_ *series.Table, r *series.Reading) (driver.Value, error) { return get(r).UTC(), nil }
	}
	switch name {
	case "malo_id":
		return str(func(r *series.Reading) string { return r.MaLo }), nil
	case "melo_id":
		return opt(func(r *series.Reading) string { return r.MeLo }), nil
	case "obis_code":
		return str(func(r *series.Reading) string { return r.OBIS }), nil
	case "sparte":
		return func(t *series.Table, r *series.Reading) (driver.Value, error) {
			if r.Commodity == 0 {
				return t.Commodity.String(), nil
			}
			return r.Commodity.String(), nil
		}, nil
	case "from":
		return ts(func(r *series.Reading) time.Time { return r.From }), nil
	case "to":
		return ts(func(r *series.Reading) time.Time { return r.To }), nil
	case "value":
		// The unscaled value: DECIMAL(18,6) is stored as an int64 of
		// millionths, as Decimal is.
		return func(_ *series.Table, r *series.Reading) (driver.Value, error) { return int64(r.Value), nil }, nil
	case "unit":
		return str(func(r *series.Reading) string { return r.Unit.String() }), nil
	case "quality":
		return str(func(r *series.Reading) string { return r.Quality.String() }), nil
	case "resolution":
		return str(func(r *series.Reading) string { return r.Resolution.String() }), nil
	case "version":
		return func(_ *series.Table, r *series.Reading) (driver.Value, error) { return r.Version, nil }, nil
	case "version_scope":
		return str(func(r *series.Reading) string { return r.VersionScope }), nil
	case "recorded_at":
		return ts(func(r *series.Reading) time.Time { return r.RecordedAt }), nil
	case "balancing_day":
		return func(_ *series.Table, r *series.Reading) (driver.Value, error) {
			d := r.BalancingDay
			return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC), nil
		}, nil
	case "subject_id":
		return opt(func(r *series.Reading) string { return r.Subject }), nil
	}
	for _, c := range t.Columns {
		if c.Name != name {
			continue
		}
		if c.Type != series.BigInt {
			return opt(func(r *series.Reading) string { return r.Extra[name] }), nil
		}
		return func(_ *series.Table, r *series.Reading) (driver.Value, error) {
			v, ok := r.Extra[name]
			if !ok || v == "" {
				return nil, nil
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("query: column %q: %w", name, err)
			}
			return n, nil
		}, nil
	}
	return nil, fmt.Errorf("query: column %q is not declared", name)
}

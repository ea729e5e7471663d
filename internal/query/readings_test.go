package query

import (
	"context"
	"database/sql/driver"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/meterstore/meterstore/series"
)

// readingRows are in-memory readings as a HotRead: a relation of rows
// with the layout's columns, in one unit, read as they were when it
// opened, or with some of them in a dictionary the rows refer to by a
// column attr. The tests' sources serve their hot tier so.
type readingRows struct {
	shape HotShape
	tab   *series.Table
	rows  []series.Reading
	ids   []int32                                                      // of each row's dictionary entry
	gets  []func(*series.Table, *series.Reading) (driver.Value, error) // of the rows' columns
	dict  [][]driver.Value                                             // the dictionary's rows' values by column
	mu    sync.Mutex
	scans []int // cursors opened, by relation
	moved int64
}

// newReadingRows returns rows as a HotRead, the columns dict in a
// dictionary; if they are the merge key's but from, in its order, the
// dictionary's ids stand for the merge key with from.
func newReadingRows(tab *series.Table, rows []series.Reading, dict ...string) (*readingRows, error) {
	l, err := layoutOf(tab)
	if err != nil {
		return nil, err
	}
	r := &readingRows{tab: tab, rows: rows, scans: make([]int, 1+min(len(dict), 1))}
	var (
		moved []func(*series.Table, *series.Reading) (driver.Value, error)
		d     = HotDict{HotRelation: HotRelation{Columns: []HotColumn{{"id", KindInt32}}}, ID: "id", Ref: "attr"}
	)
	if len(dict) > 0 {
		r.shape.Rows.Columns = append(r.shape.Rows.Columns, HotColumn{"attr", KindInt32})
		r.gets = append(r.gets, nil) // the row's id
	}
	for _, c := range l.cols {
		var k HotKind
		switch c.typ {
		case "VARCHAR":
			k = KindText
		case "TIMESTAMPTZ":
			k = KindTime
		case "DATE":
			k = KindDate
		case "BIGINT":
			k = KindInt64
		case "DECIMAL(18,6)":
			k = KindDecimal
		case "DECIMAL(20,0)":
			k = KindUint64
		default:
			return nil, fmt.Errorf("column %s: no kind for %s", c.name, c.typ)
		}
		get, err := getter(tab, c.name)
		if err != nil {
			return nil, err
		}
		if slices.Contains(dict, c.name) {
			d.Columns = append(d.Columns, HotColumn{c.name, k})
			moved = append(moved, get)
		} else {
			r.shape.Rows.Columns = append(r.shape.Rows.Columns, HotColumn{c.name, k})
			r.gets = append(r.gets, get)
		}
	}
	if len(dict) > 0 {
		ids := map[string]int32{}
		for _, row := range rows {
			entry := []driver.Value{nil}
			for _, get := range moved {
				v, err := get(tab, &row)
				if err != nil {
					return nil, err
				}
				entry = append(entry, v)
			}
			key := fmt.Sprintf("%v", entry[1:])
			id, ok := ids[key]
			if !ok {
				id = int32(len(ids)) * 7 // ids need not be dense
				ids[key] = id
				entry[0] = int64(id)
				r.dict = append(r.dict, entry)
			}
			r.ids = append(r.ids, id)
		}
		r.shape.Dicts = []HotDict{d}
		// A dictionary of the merge key but from is a series dictionary.
		if slices.Equal(dict, slices.DeleteFunc(slices.Clone(l.key), func(k string) bool { return k == "from" })) {
			r.shape.Series = "attr"
		}
	}
	r.shape.Rows.Rows = int64(len(rows))
	return r, nil
}

func (r *readingRows) Shape() HotShape { return r.shape }
func (r *readingRows) Units(int) int   { return 1 }
func (r *readingRows) Close() error    { return nil }

func (r *readingRows) Moved() (int64, int64, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.moved, 0, time.Microsecond
}

// Scans returns how many cursors were opened on each relation.
func (r *readingRows) Scans() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.scans)
}

func (r *readingRows) Scan(ctx context.Context, rel, unit int, cols []int, winners bool) (HotCursor, error) {
	if rel < 0 || rel >= len(r.scans) || unit != 0 || winners {
		return nil, fmt.Errorf("no unit %d of relation %d", unit, rel)
	}
	r.mu.Lock()
	r.scans[rel]++
	r.mu.Unlock()
	c := &readingCursor{r: r, rel: rel, cols: cols, vals: make([]driver.Value, len(cols)), row: -1, n: len(r.rows), columns: r.shape.Rows.Columns}
	if rel > 0 {
		c.n, c.columns = len(r.dict), r.shape.Dicts[0].Columns
	}
	return c, nil
}

type readingCursor struct {
	r       *readingRows
	rel     int
	columns []HotColumn
	cols    []int
	vals    []driver.Value
	row, n  int
	err     error
}

func (c *readingCursor) Next(ctx context.Context) bool {
	if c.err != nil || c.row+1 >= c.n {
		return false
	}
	c.row++
	c.r.mu.Lock()
	c.r.moved++
	c.r.mu.Unlock()
	for i, col := range c.cols {
		switch {
		case c.rel > 0:
			c.vals[i] = c.r.dict[c.row][col]
		case c.r.gets[col] == nil:
			c.vals[i] = int64(c.r.ids[c.row])
		default:
			v, err := c.r.gets[col](c.r.tab, &c.r.rows[c.row])
			if err != nil {
				c.err = err
				return false
			}
			c.vals[i] = v
		}
	}
	return true
}

func (c *readingCursor) value(i int) driver.Value { return c.vals[i] }

func (c *readingCursor) Null(i int) bool { return c.value(i) == nil }

func (c *readingCursor) Int64(i int) int64 {
	switch v := c.value(i).(type) {
	case int64:
		return v
	case time.Time:
		if c.columns[c.cols[i]].Kind == KindDate {
			return v.Unix() / 86400
		}
		return v.UnixMicro()
	}
	panic(fmt.Sprintf("no int64 in %T", c.value(i)))
}

func (c *readingCursor) Uint64(i int) uint64 { return c.value(i).(uint64) }
func (c *readingCursor) Bytes(i int) []byte  { return []byte(c.value(i).(string)) }
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

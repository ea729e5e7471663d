package hot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meterstore/meterstore/series"
)

// A Read is one table's rows in a Snapshot: the rows of the partitions
// attached when the snapshot was taken that a range selects. A partition
// detached since is read by its name as the snapshot saw it.
//
// A cursor is a server-side portal executed a batch at a time in
// PostgreSQL's binary format and decoded column by column (see Cursor):
// only the columns asked for cross, and memory holds a few batches per cursor,
// never a relation. A connection is busy only while a batch crosses, so
// that cursors share the snapshot's connections whatever their consumer
// does between batches, and a cursor its consumer abandons holds none.
//
// A Read is safe for concurrent use; its snapshot's Close ends it.
type Read struct {
	s     *Snapshot
	t     *series.Table
	q     series.Range
	lay   layout
	shape Shape
	parts []Partition
	batch int // rows a cursor fetches at once
	// detached and attached are the floor as of the snapshot (Floor).
	detached, attached time.Time
	// days says, once asked (daysStored), whether the snapshot has the
	// aggregate of days, and which of parts its dirty log names.
	days struct {
		once  sync.Once
		ok    bool
		dirty []bool
		// tokens are each part's token of its stored sums (see
		// dayTokensName), "" for none or where not asked.
		tokens []string
		// skip are the units whose day sums the caller reads elsewhere
		// (SkipDays): their cursors hand over nothing.
		skip []bool
		err  error
		// joined is closed once the connection asked for the second
		// statement of the clean sums has joined the snapshot, or not.
		joined <-chan struct{}
	}

	rows, bytes atomic.Int64
	first, last atomic.Int64 // unix nanoseconds of the first and last batch
}

// batchRows is how many rows a cursor fetches at once: a few of DuckDB's
// vectors of 2,048.
const batchRows = 8192

// Read returns t's rows in the snapshot that q selects (its from range,
// market locations and OBIS codes): it lists the partitions then attached
// that q meets and the table's floor (Floor), and estimates the rows of
// its relations, in one round trip on the snapshot's first connection.
func (s *Snapshot) Read(ctx context.Context, t *series.Table, q series.Range) (*Read, error) {
	const op = "read"
	r, list, err := s.h.newRead(ctx, t, q)
	if err != nil {
		return nil, err
	}
	r.s = s
	// s.conns grows as connections join the snapshot (acquire).
	s.mu.Lock()
	holder := s.conns[0]
	s.mu.Unlock()
	holder.mu.Lock()
	res, err := holder.c.Conn().PgConn().Exec(ctx, list).ReadAll()
	holder.mu.Unlock()
	if err == nil && len(res) != 1 {
		err = fmt.Errorf("list the partitions: %d results", len(res))
	}
	if err != nil {
		return nil, classify(op, t.Name, err)
	}
	r.listed(res[0].Rows)
	return r, nil
}

// OpenSnapshotRead takes a snapshot as OpenSnapshot does and opens the
// Read of t in it that q selects, in the one round trip that takes the
// snapshot.
func (h *Tier) OpenSnapshotRead(ctx context.Context, conns int, t *series.Table, q series.Range) (*Snapshot, *Read, error) {
	s, r, _, err := h.OpenSnapshotReadBeside(ctx, conns, t, q, nil)
	return s, r, err
}

// A Beside is the timestamp a statement read beside its rows, in their
// snapshot (see SeriesQuery.Beside); Has is false where it read none.
type Beside struct {
	At  time.Time
	Has bool
}

// OpenSnapshotReadBeside opens the Read as OpenSnapshotRead does and, if
// beside is set, reads the scalar subquery of a timestamp it returns in
// the snapshot too, in the same round trip (arg makes a value a literal).
func (h *Tier) OpenSnapshotReadBeside(ctx context.Context, conns int, t *series.Table, q series.Range, beside func(arg func(any) string) string) (*Snapshot, *Read, Beside, error) {
	r, list, err := h.newRead(ctx, t, q)
	if err != nil {
		return nil, nil, Beside{}, err
	}
	then := []string{list}
	if beside != nil {
		// In microseconds since the epoch, which no session setting
		// changes, where a timestamp's text depends on DateStyle.
		then = append(then, `SELECT (EXTRACT(EPOCH FROM `+beside(func(v any) string { return lit(fmt.Sprint(v)) })+`::timestamptz) * 1000000)::int8`)
	}
	s, res, err := h.openSnapshot(ctx, conns, then...)
	if err != nil {
		return nil, nil, Beside{}, err
	}
	r.s = s
	r.listed(res[0].Rows)
	var b Beside
	if beside != nil {
		if len(res) != 2 || len(res[1].Rows) != 1 || len(res[1].Rows[0]) != 1 {
			return nil, nil, Beside{}, errors.Join(fmt.Errorf("hot: read beside the snapshot: %d results", len(res)), s.Close())
		}
		if v := res[1].Rows[0][0]; v != nil {
			us, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil {
				return nil, nil, Beside{}, errors.Join(fmt.Errorf("hot: read beside the snapshot: %w", err), s.Close())
			}
			b = Beside{At: time.UnixMicro(us).UTC(), Has: true}
		}
	}
	return s, r, b, nil
}

// newRead returns a Read of t's rows that q selects, in no snapshot yet,
// and the statement that lists its partitions, whose rows listed takes.
func (h *Tier) newRead(ctx context.Context, t *series.Table, q series.Range) (*Read, string, error) {
	const op = "read"
	if err := t.Validate(); err != nil {
		return nil, "", err
	}
	lay, err := h.layoutOf(ctx, h.pool, t)
	if err != nil {
		return nil, "", classify(op, t.Name, err)
	}
	r := &Read{t: t, q: q, lay: lay, shape: lay.shape(t), batch: batchRows}
	est := func(name string) string {
		return `(SELECT reltuples::int8 FROM pg_catalog.pg_class WHERE oid = ` + lit(h.ident(name)) + `::regclass)`
	}
	cols := []string{"c.relname", "c.reltuples::int8", "i.inhrelid IS NOT NULL AND NOT i.inhdetachpending"}
	for _, d := range lay.dictNames(t) {
		cols = append(cols, est(d))
	}
	// Every partition, attached or detached, as partitions lists them:
	// the detached ones give the floor as of the snapshot (see Floor).
	list := `SELECT ` + strings.Join(cols, ", ") + ` FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_catalog.pg_inherits i ON i.inhrelid = c.oid AND i.inhparent = ` + lit(h.ident(t.Name)) + `::regclass
WHERE n.nspname = ` + lit(h.schema) + ` AND c.relkind = 'r' AND c.relname ~ ` + lit("^"+t.Name+"_p[0-9]{8}$")
	return r, list, nil
}

// listed completes r from the rows of its listing (see newRead): the
// attached partitions q meets, the rows' estimates, the floor.
func (r *Read) listed(rows [][][]byte) {
	t, q := r.t, r.q
	var (
		total int64
		every []Partition
	)
	for _, row := range rows {
		for i := range r.shape.Dicts {
			if row[i+3] != nil {
				r.shape.Dicts[i].Rows, _ = strconv.ParseInt(string(row[i+3]), 10, 64)
			}
		}
		start, ok := partitionStart(t, string(row[0]))
		if !ok {
			continue
		}
		p := Partition{Name: string(row[0]), From: start, To: t.Width.Next(start), Attached: string(row[2]) == "t"}
		every = append(every, p)
		if !p.Attached || (!q.To.IsZero() && !p.From.Before(q.To)) || (!q.From.IsZero() && !q.From.Before(p.To)) {
			continue
		}
		if n, err := strconv.ParseInt(string(row[1]), 10, 64); err == nil && n > 0 {
			total += n
		}
		r.parts = append(r.parts, p)
	}
	slices.SortFunc(r.parts, func(a, b Partition) int { return a.From.Compare(b.From) })
	r.shape.Rows.Rows = total
	r.detached, r.attached = floor(every)
}

// Floor returns the table's floor (see Tier.Floor) as of the snapshot,
// listed with the read's partitions: every row at or above detached was
// in a partition the snapshot saw attached, which the read reads by its
// name even once it is detached.
func (r *Read) Floor() (detached, attached time.Time) { return r.detached, r.attached }

// lit returns s as a string literal whatever standard_conforming_strings.
func lit(s string) string {
	return `E'` + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s) + `'`
}

// timeLit returns t as a timestamptz literal, to the microsecond.
func timeLit(t time.Time) string {
	return lit(t.UTC().Format("2006-01-02 15:04:05.999999")+"+00") + `::timestamptz`
}

// textArray returns vs as a text[] literal.
func textArray(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = lit(v)
	}
	return `ARRAY[` + strings.Join(q, ", ") + `]::text[]`
}

// Shape returns how the read presents the table's readings.
func (r *Read) Shape() Shape { return r.shape }

// Partitions returns the attached partitions the read covers, by start.
func (r *Read) Partitions() []Partition { return slices.Clone(r.parts) }

// Units returns in how many parts relation rel is read: the rows (rel 0)
// a partition at a time, a dictionary (rel i, Shape.Dicts[i-1]) at once.
func (r *Read) Units(rel int) int {
	if rel == 0 {
		return len(r.parts)
	}
	return 1
}

// Moved returns the rows the read's cursors have received, their bytes on
// the wire (the values, without the protocol's framing), and the time
// from the first batch's request to the last one's arrival.
func (r *Read) Moved() (rows, bytes int64, span time.Duration) {
	if f := r.first.Load(); f != 0 {
		span = time.Duration(r.last.Load() - f)
	}
	return r.rows.Load(), r.bytes.Load(), span
}

// Scan opens a cursor over part unit of relation rel (see Units), with the
// columns cols of that relation, in that order. With winners, a cursor
// over the rows hands over only the newest version of each merge key: the
// partition is read in primary key order, an index-ordered scan, and of
// each run of a key's versions only the last crosses into the cursor's
// batch; PostgreSQL sorts nothing.
func (r *Read) Scan(ctx context.Context, rel, unit int, cols []int, winners bool) (*Cursor, error) {
	const op = "read"
	var (
		from   Relation
		source string
		where  []string
	)
	switch {
	case rel == 0 && unit >= 0 && unit < len(r.parts):
		p := r.parts[unit]
		from, source = r.shape.Rows, r.s.h.ident(p.Name)
		where = r.partWhere(p, time.Time{})
	case rel > 0 && rel <= len(r.shape.Dicts) && unit == 0:
		from = r.shape.Dicts[rel-1].Relation
		source = r.s.h.ident(r.lay.dictNames(r.t)[rel-1])
		buckets := make([]string, len(r.parts))
		for i, p := range r.parts {
			buckets[i] = timeLit(p.From)
		}
		where = append(where, `bucket = ANY (ARRAY[`+strings.Join(buckets, ", ")+`]::timestamptz[])`)
		if rel == 1 {
			where = append(where, r.keys()...)
		}
	default:
		return nil, &series.Error{Kind: series.InvalidInput, Op: op, Table: r.t.Name, Err: fmt.Errorf("no unit %d of relation %d", unit, rel)}
	}
	if winners && rel != 0 {
		return nil, &series.Error{Kind: series.InvalidInput, Op: op, Table: r.t.Name, Err: fmt.Errorf("relation %d has no versions", rel)}
	}
	c := r.newCursor(len(cols))
	list := make([]string, len(cols))
	for i, col := range cols {
		if col < 0 || col >= len(from.Columns) {
			return nil, &series.Error{Kind: series.InvalidInput, Op: op, Table: r.t.Name, Err: fmt.Errorf("no column %d of relation %d", col, rel)}
		}
		name := from.Columns[col].Name
		c.kinds[i], list[i] = from.Columns[col].Kind, quote(name)
		if rel != 0 {
			continue
		}
		if ts, is := r.lay.(timeStepper); is {
			if src, micros, add, ok := ts.timeStep(r.t, name); ok {
				if c.steps == nil {
					c.steps = make([]stepTime, len(cols))
				}
				c.steps[i] = stepTime{micros: micros, add: add}
				list[i] = src + ` AS ` + list[i]
				continue
			}
		}
		if e := r.lay.columnExpr(r.t, name); e != "" {
			list[i] = e + ` AS ` + list[i]
		}
	}
	var order string
	if winners {
		key := r.lay.mergeKey(r.t)
		// The key's columns, those not asked for after the others.
		for _, k := range key {
			at := slices.Index(list, quote(k))
			if at < 0 {
				at = len(list)
				list = append(list, quote(k))
				c.hidden++
			}
			c.keys = append(c.keys, at)
		}
		order = ` ORDER BY ` + r.lay.primaryKey(r.t)
	}
	sql := `SELECT ` + strings.Join(list, ", ") + ` FROM ` + source
	if len(where) > 0 {
		sql += ` WHERE ` + strings.Join(where, " AND ")
	}
	sql += order
	return r.open(ctx, c, sql)
}

// A timeStepper is a layout that stores a time column of the rows as a
// whole number of fixed steps since the Unix epoch.
type timeStepper interface {
	// timeStep returns the stored column (int4) of column name, the
	// step's length in microseconds and the steps to add; ok is false
	// for a column not stored so.
	timeStep(t *series.Table, name string) (col string, micros, add int64, ok bool)
}

// keys returns the conditions on malo_id and obis_code of the read's
// range.
func (r *Read) keys() []string {
	var conds []string
	if len(r.q.MaLo) > 0 {
		conds = append(conds, `malo_id = ANY (`+textArray(r.q.MaLo)+`)`)
	}
	if len(r.q.OBIS) > 0 {
		conds = append(conds, `obis_code = ANY (`+textArray(r.q.OBIS)+`)`)
	}
	return conds
}

// partWhere returns the conditions that select the stored rows of
// partition p the read's range selects, from lo on if lo is later than
// the range's start. Bounds only where they cut the partition: none to
// check per row otherwise.
func (r *Read) partWhere(p Partition, lo time.Time) []string {
	return append(r.rangeWhere(p, lo), r.lay.keyFilter(r.s.h, r.t, p, r.keys())...)
}

// rangeWhere returns the conditions of partWhere on the rows' start:
// none where the read takes all of p.
func (r *Read) rangeWhere(p Partition, lo time.Time) []string {
	var where []string
	if r.q.From.After(lo) {
		lo = r.q.From
	}
	if !lo.IsZero() && lo.After(p.From) {
		where = append(where, r.lay.fromColumn()+` >= `+r.lay.fromLit(r.t, lo))
	}
	if !r.q.To.IsZero() && r.q.To.Before(p.To) {
		where = append(where, r.lay.fromColumn()+` < `+r.lay.fromLit(r.t, r.q.To))
	}
	return where
}

// newCursor returns a cursor of the read with n columns, to be opened.
func (r *Read) newCursor(n int) *Cursor {
	return &Cursor{r: r, kinds: make([]Kind, n), ints: make([]int64, n), uints: make([]uint64, n), vals: make([][]byte, n)}
}

// open starts cursor c over the rows of sql on a connection of the
// read's snapshot.
func (r *Read) open(ctx context.Context, c *Cursor, sql string) (*Cursor, error) {
	var ok bool
	if c.conn, c.name, ok = r.s.assign(); !ok {
		return nil, &series.Error{Kind: series.InvalidInput, Op: "read", Table: r.t.Name, Err: errors.New("the snapshot is closed")}
	}
	c.query = sql
	if err := c.start(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

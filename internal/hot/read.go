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

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/series"
)

// A Read is one consistent read of a table's hot tier: the rows of the
// partitions attached when it was opened, as of one PostgreSQL snapshot.
// The transaction that opened it exports the snapshot
// (pg_export_snapshot) and stays open until Close; every other connection
// that reads for it imports the snapshot first (SET TRANSACTION SNAPSHOT),
// so that its relations may be read in parallel, a partition per cursor,
// and still agree with each other and with the partitions listed. A
// partition detached after the snapshot is read by its name as the
// snapshot saw it.
//
// A cursor is a server-side cursor fetched a batch at a time in
// PostgreSQL's binary format and decoded column by column (see Cursor):
// only the columns asked for cross, and memory holds a batch per cursor,
// never a relation. A connection is busy only while a batch crosses, so
// that cursors share the read's connections whatever their consumer does
// between batches, and a cursor its consumer abandons holds none.
//
// A Read is safe for concurrent use; Close must be called once, when its
// cursors are no longer used.
type Read struct {
	h     *Tier
	t     *series.Table
	q     series.Range
	lay   layout
	shape Shape
	parts []Partition
	snap  string

	ctx    context.Context // ends at Close: acquisitions
	cancel context.CancelFunc
	grow   sync.WaitGroup
	max    int
	batch  int // rows a cursor fetches at once

	mu      sync.Mutex
	conns   []*readConn // in the snapshot; the first opened it
	pending int         // connections being acquired
	closed  bool
	next    int // cursor names

	rows, bytes atomic.Int64
	first, last atomic.Int64 // unix nanoseconds of the first and last batch
}

// A readConn is a connection of a Read and the cursors declared on it,
// which only it can fetch.
type readConn struct {
	mu   sync.Mutex // held while a statement runs
	c    *pgxpool.Conn
	open int // cursors not at their end
}

// batchRows is how many rows a cursor fetches at once: a few of DuckDB's
// vectors of 2,048.
const batchRows = 8192

// OpenRead opens a Read of t's rows that q selects (its from range, market
// locations and OBIS codes) on one connection of the pool, which it holds
// until Close. It reads with up to conns connections at once, at most half
// the pool's: those beyond the first it acquires as the pool has them, and
// never waits for.
func (h *Tier) OpenRead(ctx context.Context, t *series.Table, q series.Range, conns int) (*Read, error) {
	const op = "read"
	if err := t.Validate(); err != nil {
		return nil, err
	}
	lay, err := h.layoutOf(ctx, h.pool, t)
	if err != nil {
		return nil, classify(op, t.Name, err)
	}
	holder, err := h.pool.Acquire(ctx)
	if err != nil {
		return nil, classify(op, t.Name, err)
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	conns = min(conns, int(h.pool.Config().MaxConns)/2)
	r := &Read{h: h, t: t, q: q, lay: lay, shape: shapeOf(t, lay), ctx: rctx, cancel: cancel, max: max(conns, 1), batch: batchRows,
		conns: []*readConn{{c: holder}}}
	if err := r.begin(ctx, holder); err != nil {
		r.Close()
		return nil, classify(op, t.Name, err)
	}
	// The partitions are read in parallel: the other connections are
	// asked for now, to be there when the first rows are.
	for range min(r.max, len(r.parts)) - 1 {
		r.acquire()
	}
	return r, nil
}

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

// begin starts the snapshot on holder, exports it, and lists in it the
// attached partitions that q meets and the estimated rows of the
// relations: one round trip.
func (r *Read) begin(ctx context.Context, holder *pgxpool.Conn) error {
	h, t := r.h, r.t
	est := func(name string) string {
		return `(SELECT reltuples::int8 FROM pg_catalog.pg_class WHERE oid = ` + lit(h.ident(name)) + `::regclass)`
	}
	dicts := `NULL::int8, NULL::int8`
	if r.lay == layoutDictionary {
		dicts = est(seriesName(t)) + `, ` + est(attrsName(t))
	}
	// A cursor is planned for its first rows unless told otherwise.
	sql := `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET LOCAL cursor_tuple_fraction = 1;
SELECT pg_catalog.pg_export_snapshot(), ` + dicts + `;
SELECT c.relname, c.reltuples::int8 FROM pg_catalog.pg_inherits i JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = ` + lit(h.ident(t.Name)) + `::regclass AND NOT i.inhdetachpending`
	res, err := holder.Conn().PgConn().Exec(ctx, sql).ReadAll()
	if err != nil {
		return err
	}
	if len(res) != 4 || len(res[2].Rows) != 1 {
		return fmt.Errorf("open the snapshot: %d results", len(res))
	}
	row := res[2].Rows[0]
	r.snap = string(row[0])
	for i := range r.shape.Dicts {
		if row[i+1] != nil {
			r.shape.Dicts[i].Rows, _ = strconv.ParseInt(string(row[i+1]), 10, 64)
		}
	}
	var total int64
	for _, row := range res[3].Rows {
		start, ok := partitionStart(t, string(row[0]))
		if !ok {
			continue
		}
		p := Partition{Name: string(row[0]), From: start, To: t.Width.Next(start), Attached: true}
		if (!r.q.To.IsZero() && !p.From.Before(r.q.To)) || (!r.q.From.IsZero() && !r.q.From.Before(p.To)) {
			continue
		}
		if n, err := strconv.ParseInt(string(row[1]), 10, 64); err == nil && n > 0 {
			total += n
		}
		r.parts = append(r.parts, p)
	}
	slices.SortFunc(r.parts, func(a, b Partition) int { return a.From.Compare(b.From) })
	r.shape.Rows.Rows = total
	return nil
}

// acquire has one more connection of the pool join the read, in its
// snapshot, unless it has its most or is closed. It does not wait: the
// connection joins when the pool has one, or never.
func (r *Read) acquire() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || len(r.conns)+r.pending >= r.max {
		return
	}
	r.pending++
	r.grow.Add(1)
	go func() {
		defer r.grow.Done()
		c, err := r.h.pool.Acquire(r.ctx)
		if err == nil {
			_, err = c.Exec(r.ctx, `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET TRANSACTION SNAPSHOT `+lit(r.snap)+
				`; SET LOCAL cursor_tuple_fraction = 1`)
			if err != nil {
				c.Release()
			}
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.pending--
		switch {
		case err != nil:
		case r.closed:
			c.Release()
		default:
			r.conns = append(r.conns, &readConn{c: c})
		}
	}()
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
	keys := func() []string {
		var conds []string
		if len(r.q.MaLo) > 0 {
			conds = append(conds, `malo_id = ANY (`+textArray(r.q.MaLo)+`)`)
		}
		if len(r.q.OBIS) > 0 {
			conds = append(conds, `obis_code = ANY (`+textArray(r.q.OBIS)+`)`)
		}
		return conds
	}
	switch {
	case rel == 0 && unit >= 0 && unit < len(r.parts):
		p := r.parts[unit]
		from, source = r.shape.Rows, r.h.ident(p.Name)
		// Bounds only where the range cuts the partition: none to check
		// per row otherwise.
		if !r.q.From.IsZero() && r.q.From.After(p.From) {
			where = append(where, `"from" >= `+timeLit(r.q.From))
		}
		if !r.q.To.IsZero() && r.q.To.Before(p.To) {
			where = append(where, `"from" < `+timeLit(r.q.To))
		}
		if r.lay != layoutDictionary {
			where = append(where, keys()...)
		} else if len(r.q.MaLo)+len(r.q.OBIS) > 0 {
			sub := append([]string{`bucket = ` + timeLit(p.From)}, keys()...)
			where = append(where, `series = ANY (ARRAY(SELECT id FROM `+r.h.ident(seriesName(r.t))+` WHERE `+strings.Join(sub, " AND ")+`))`)
		}
	case rel > 0 && rel <= len(r.shape.Dicts) && unit == 0:
		from = r.shape.Dicts[rel-1].Relation
		name := seriesName(r.t)
		if rel == 2 {
			name = attrsName(r.t)
		}
		source = r.h.ident(name)
		buckets := make([]string, len(r.parts))
		for i, p := range r.parts {
			buckets[i] = timeLit(p.From)
		}
		where = append(where, `bucket = ANY (ARRAY[`+strings.Join(buckets, ", ")+`]::timestamptz[])`)
		if rel == 1 {
			where = append(where, keys()...)
		}
	default:
		return nil, &series.Error{Kind: series.InvalidInput, Op: op, Table: r.t.Name, Err: fmt.Errorf("no unit %d of relation %d", unit, rel)}
	}
	if winners && rel != 0 {
		return nil, &series.Error{Kind: series.InvalidInput, Op: op, Table: r.t.Name, Err: fmt.Errorf("relation %d has no versions", rel)}
	}
	c := &Cursor{r: r, kinds: make([]Kind, len(cols)), ints: make([]int64, len(cols)), uints: make([]uint64, len(cols)), vals: make([][]byte, len(cols))}
	list := make([]string, len(cols))
	for i, col := range cols {
		if col < 0 || col >= len(from.Columns) {
			return nil, &series.Error{Kind: series.InvalidInput, Op: op, Table: r.t.Name, Err: fmt.Errorf("no column %d of relation %d", col, rel)}
		}
		c.kinds[i], list[i] = from.Columns[col].Kind, quote(from.Columns[col].Name)
	}
	var order string
	if winners {
		key := r.t.MergeKey()
		if r.lay == layoutDictionary {
			key = []string{"series", "from"}
		}
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
		order = ` ORDER BY ` + primaryKey(r.t, r.lay)
	}
	sql := `SELECT ` + strings.Join(list, ", ") + ` FROM ` + source
	if len(where) > 0 {
		sql += ` WHERE ` + strings.Join(where, " AND ")
	}
	sql += order
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, &series.Error{Kind: series.InvalidInput, Op: op, Table: r.t.Name, Err: errors.New("the read is closed")}
	}
	// The least busy connection; one more is asked for if every one has
	// a cursor.
	c.conn = r.conns[0]
	for _, rc := range r.conns[1:] {
		if rc.open < c.conn.open {
			c.conn = rc
		}
	}
	c.conn.open++
	r.next++
	c.name = "meterstore_read_" + strconv.Itoa(r.next)
	busy := c.conn.open > 1
	r.mu.Unlock()
	if busy {
		r.acquire()
	}
	c.first = `DECLARE ` + c.name + ` BINARY NO SCROLL CURSOR FOR ` + sql + `; `
	if err := c.fetch(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Close ends the read: it ends the transactions and gives the connections
// back to the pool. Its cursors must not be used any more.
func (r *Read) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.grow.Wait()
	ctx := context.WithoutCancel(r.ctx)
	var errs []error
	for _, rc := range r.conns {
		rc.mu.Lock()
		// A read-only transaction: rolling back ends it as committing
		// would, and closes its cursors. A connection that fails to is
		// destroyed on release.
		if !rc.c.Conn().IsClosed() {
			if _, err := rc.c.Exec(ctx, `ROLLBACK`); err != nil {
				errs = append(errs, err)
			}
		}
		rc.c.Release()
		rc.mu.Unlock()
	}
	if err := errors.Join(errs...); err != nil {
		return classify("read", r.t.Name, err)
	}
	return nil
}

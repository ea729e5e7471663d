package hot

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/internal/hot/pgnum"
	"github.com/meterstore/meterstore/series"
)

// stagePrefix begins the name of the temporary table a batch is copied
// into. It lives in the session's own temporary schema and is dropped at
// commit. Each column layout has a table name of its own (stageName): pgx
// caches what it learns of a COPY's target by the statement's text, and
// one layout's description would encode another's rows.
const stagePrefix = "meterstore_hot_stage_"

// maxAttempts bounds how often Write re-checks a batch that lost a race
// against a concurrent writer of the same readings.
const maxAttempts = 4

// Write stores a batch of readings in table t, atomically: either every row
// is stored or present already, or nothing is written and the error names
// the offending rows.
//
// The batch is validated in Go (check digits, codes, the interval grid, the
// partition for each row) and checked in itself, then written in one READ
// COMMITTED transaction. Against the stored rows, the primary key and the
// table's constraints and statement checks (see Integrity) refuse what must
// not be written. A batch is first
// copied straight into the table under a savepoint (the fast path); only if
// the constraints refuse it does Write roll back to the savepoint, copy the
// batch into a temporary staging table and look at the stored rows to tell
// an identical redelivery, which it skips, from a violation, which it
// reports, before inserting the rest with one INSERT ... SELECT. Tables of
// IntegrityWrite check the batch against the stored rows in the
// same transaction, holding an advisory lock per partition so concurrent
// writers cannot slip past each other's checks.
//
// Each row's Status says what it did (see outcome.go): Inserted, Present
// when stored identically under its version already, Superseded or
// Shadowed when other versions of its merge key are stored, decided by
// version under per-series locks. A different value under an existing key
// and version is an IntegrityViolation. A reading without an attached partition for its
// From is InvalidInput wrapping ErrNoPartition: it belongs to a window not
// yet created or already archived, and Write will not park it where no
// query looks; the caller may create the partition (CreatePartitions) and
// write again.
func (h *Tier) Write(ctx context.Context, t *series.Table, rows []series.Reading) (series.Result, error) {
	return h.WriteWith(ctx, t, rows, WriteOptions{})
}

// WriteOptions change how Write stores a batch.
type WriteOptions struct {
	// Substitute appends the rows authoritatively: each must come without
	// a version (zero) and is given the next version of its merge key,
	// one above the highest stored, in the write's transaction under the
	// series locks, so it wins over what is stored (see substitute.go).
	Substitute bool
}

// WriteWith is Write with options.
func (h *Tier) WriteWith(ctx context.Context, t *series.Table, rows []series.Reading, o WriteOptions) (series.Result, error) {
	if len(rows) == 0 {
		b, err := h.prepareWrite(t, rows, o)
		if err != nil {
			return series.Result{}, err
		}
		return h.writePrepared(ctx, t, b, nil)
	}
	// The transaction's first round trips need no rows: they go while
	// the rows are checked and converted. A batch refused meanwhile
	// gives up waiting for a connection.
	acquiring, refused := context.WithCancel(ctx)
	defer refused()
	begun := make(chan beginning, 1)
	go func() {
		var w beginning
		conn, err := h.pool.Acquire(acquiring)
		if w.err = err; err == nil {
			w.w, w.err = h.begin(ctx, conn, t)
		}
		begun <- w
	}()
	b, err := h.prepareWrite(t, rows, o)
	if err != nil {
		refused()
	}
	w := <-begun
	if w.err == nil {
		defer w.w.end(ctx)
	}
	switch {
	case err != nil:
		return series.Result{}, err
	case w.err != nil:
		return series.Result{}, classify("write", t.Name, w.err)
	}
	return h.writePrepared(ctx, t, b, w.w)
}

// A beginning is what begin returned.
type beginning struct {
	w   *begun
	err error
}

// prepareWrite is the client's share of a write, which needs no
// connection: the table's and the rows' checks, and the rows converted
// for the copy.
func (h *Tier) prepareWrite(t *series.Table, rows []series.Reading, o WriteOptions) (*batch, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if o.Substitute {
		if err := checkSubstitutes(t, rows); err != nil {
			return nil, err
		}
	}
	b, err := h.prepare(t, rows)
	if err != nil {
		return nil, err
	}
	b.substitute = o.Substitute
	return b, nil
}

// encodeAhead encodes b's rows for the direct copy now, where t's layout
// is known already, which it is after the table's first write: WriteEach
// encodes a batch while the one before it is being written.
func (h *Tier) encodeAhead(t *series.Table, b *batch) {
	if l, ok := h.knownLayout(t); ok && binaryDirect(t, l) && !b.substitute {
		b.enc = encodeDirect(t, l, b.rows, h.spare.takeEncoded())
	}
}

// encodeAside starts encoding b's rows for the direct copy on a
// goroutine of its own, where t's layout is known and they were not
// encoded ahead, so that Write encodes them while it waits for the
// transaction's first round trips. The encoder reads only what the write
// does not change before the copy: the rows' intervals, values and
// versions (a substitute's versions change, and are never encoded).
func (h *Tier) encodeAside(t *series.Table, b *batch) {
	l, ok := h.knownLayout(t)
	if !ok || !binaryDirect(t, l) || b.substitute || b.enc != nil {
		return
	}
	done := make(chan *encoded, 1) // the encoder never waits, whether or not the write gets to the copy
	b.encoding = done
	into := h.spare.takeEncoded()
	go func() { done <- encodeDirect(t, l, b.rows, into) }()
}

// writePrepared writes a batch prepareWrite prepared, in the transaction
// w began, or one of its own if w is nil, and returns what each row did.
// b is released: its staged rows go to the next batch.
func (h *Tier) writePrepared(ctx context.Context, t *series.Table, b *batch, w *begun) (series.Result, error) {
	const op = "write"
	defer h.spare.give(b)
	if len(b.rows) > 0 {
		if w == nil {
			conn, err := h.pool.Acquire(ctx)
			if err == nil {
				w, err = h.begin(ctx, conn, t)
			}
			if err != nil {
				return series.Result{}, classify(op, t.Name, err)
			}
			defer w.end(ctx)
		}
		if err := h.write(ctx, t, b, w); err != nil {
			// A copy that failed may have left pgconn's reader of the
			// encoding running: it is not reused.
			b.enc = nil
			return series.Result{}, classify(op, t.Name, err)
		}
	}
	outcomes(t, b)
	res := series.Tally(b.status)
	if b.substitute {
		res.Versions = make([]uint64, len(b.status))
		for i := range b.rows {
			res.Versions[b.rows[i].row] = b.rows[i].src.Version
		}
	}
	return res, nil
}

// A begun write is a write's transaction, begun: its connection, and the
// partitions of its table attached when it began.
type begun struct {
	conn     *pgxpool.Conn
	tx       pgx.Tx
	attached []string
}

// begin begins a write's transaction on table t on conn, in two round
// trips that need nothing of the rows. The write owns conn from here on:
// on an error begin releases it.
func (h *Tier) begin(ctx context.Context, conn *pgxpool.Conn, t *series.Table) (*begun, error) {
	pgnum.Register(conn.Conn().TypeMap())
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		conn.Release()
		return nil, err
	}
	w := &begun{conn: conn, tx: tx}
	// A batch is small next to a partition, so the checks probe the
	// primary key row by row; a hash or merge join would read the whole
	// partition. JIT compilation costs more than these statements take.
	// The writer's lock on the parent, taken before anything else, keeps
	// a partition from being detached between the check of the rows'
	// partitions and the insert.
	// These and the partitions' look-up go in one round trip.
	var first pgx.Batch
	for _, set := range []string{`SET LOCAL enable_hashjoin = off`, `SET LOCAL enable_mergejoin = off`, `SET LOCAL jit = off`,
		`LOCK TABLE ` + h.ident(t.Name) + ` IN ROW EXCLUSIVE MODE`} {
		first.Queue(set)
	}
	first.Queue(attachedSQL, h.ident(t.Name)).Query(func(rows pgx.Rows) (err error) {
		w.attached, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err := tx.SendBatch(ctx, &first).Close(); err != nil {
		w.end(ctx)
		return nil, err
	}
	return w, nil
}

// end rolls the transaction back unless it committed, and releases its
// connection.
func (w *begun) end(ctx context.Context) {
	w.tx.Rollback(context.WithoutCancel(ctx))
	w.conn.Release()
}

// write writes b in the transaction w began, and commits it.
func (h *Tier) write(ctx context.Context, t *series.Table, b *batch, w *begun) error {
	h.encodeAside(t, b)
	defer func() {
		// No encoder outlives the write, though its copy was not reached.
		if b.enc == nil && b.encoding != nil {
			b.enc = <-b.encoding
		}
	}()
	tx := w.tx
	if err := checkPartitions(t, b, w.attached); err != nil {
		return err
	}
	integrity, err := h.integrityOf(ctx, tx, t)
	if err != nil {
		return err
	}
	lay, err := h.layoutOf(ctx, tx, t)
	if err != nil {
		return err
	}
	probeAll := integrity == series.IntegrityWrite
	if err := h.lockPartitions(ctx, tx, t, b, probeAll); err != nil {
		return err
	}
	if err := lay.resolve(ctx, h, tx, t, b); err != nil {
		return err
	}
	// The series locks (none for the series this write is the first of,
	// see queueLockSeries), the look-up of other versions under them and
	// the fast path's savepoint go in one round trip.
	var q pgx.Batch
	if !probeAll {
		// The partition locks of probeAll serialise the writers of a
		// series already.
		h.queueLockSeries(&q, t, b)
	}
	h.queueOthers(&q, t, lay, b)
	fast := fastPath(t, integrity, b)
	if fast {
		q.Queue(`SAVEPOINT hot_fast`)
	}
	if err := tx.SendBatch(ctx, &q).Close(); err != nil {
		return err
	}
	if b.substitute {
		if err := nextVersions(t, b); err != nil {
			return err
		}
	}
	if fast {
		switch done, err := h.copyDirect(ctx, tx, t, integrity, lay, b); {
		case err != nil:
			return err
		case done:
			return h.commit(ctx, tx)
		}
		// A stored row refused the batch: it may be a redelivery, which
		// is no error, so the staged path finds out which rows did.
		probeAll = true
	}
	if _, err := tx.Exec(ctx, h.stageDDL(t, lay)); err != nil {
		return err
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{stageName(t, lay)}, stageColumns(t, lay), newStageSource(t, lay, b.rows)); err != nil {
		return err
	}
	insert := h.insertSQL(t, lay)
	for attempt := 1; ; attempt++ {
		if probeAll || b.anyProbe() {
			if err := h.probe(ctx, tx, t, lay, b, probeAll); err != nil {
				return err
			}
		}
		// The savepoint lets a refused insert be diagnosed in the same
		// transaction, against the same staged rows.
		if _, err := tx.Exec(ctx, `SAVEPOINT hot_insert`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, insert)
		if err == nil {
			break
		}
		if !concurrentRefusal(err) {
			return err
		}
		if attempt == maxAttempts {
			return &series.Error{Kind: series.Unavailable, Op: "write", Table: t.Name,
				Err: fmt.Errorf("refused %d times by rows written concurrently: %w", attempt, err)}
		}
		if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT hot_insert`); err != nil {
			return err
		}
		probeAll = true
	}
	return h.commit(ctx, tx)
}

// commit commits a write's transaction once the test hook, if set, has
// let it: a test holds a write there, its rows stored and uncommitted.
func (h *Tier) commit(ctx context.Context, tx pgx.Tx) error {
	if h.beforeCommit != nil {
		if err := h.beforeCommit(ctx); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}

// anyProbe reports whether a row is to be checked before the insert.
func (b *batch) anyProbe() bool {
	for i := range b.rows {
		if b.rows[i].probe {
			return true
		}
	}
	return false
}

// attachedSQL returns the names of the partitions attached to the table $1.
const attachedSQL = `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = $1::regclass AND NOT i.inhdetachpending`

// checkPartitions fails the batch if a row has no attached partition
// (names, as attachedSQL returns them), with an InvalidInput error
// wrapping ErrNoPartition that names those rows.
func checkPartitions(t *series.Table, b *batch, names []string) error {
	attached := make(map[int64]bool, len(names))
	for _, n := range names {
		if start, ok := partitionStart(t, n); ok {
			attached[start.Unix()] = true
		}
	}
	var bad series.Problems
	var last time.Time // rows come in runs of one partition
	for i := range b.rows {
		s := &b.rows[i]
		if p := t.Width.Start(s.from); !p.Equal(last) {
			if !attached[p.Unix()] {
				bad.Add(int(s.row), "no partition for from %s: partition %s is not attached (not yet created, or archived)",
					s.from.Format(time.RFC3339), partitionName(t, p))
				continue
			}
			last = p
		}
	}
	if err := bad.Err(series.InvalidInput, "write", t.Name); err != nil {
		err.(*series.Error).Err = ErrNoPartition
		return err
	}
	return nil
}

// lockPartitions marks the rows to be checked before the insert and takes
// an advisory lock on every partition those checks read, in a fixed order.
// A writer holding the lock has seen every row committed under it, so two
// writers cannot both pass a check that only one of them may.
//
// With exclusion constraints only rows whose checks read other partitions
// than their own need this: an interval crossing a partition boundary, or a
// row contained in a longer one that starts in an earlier partition. The
// constraints, being per partition, cannot see those pairs.
func (h *Tier) lockPartitions(ctx context.Context, tx pgx.Tx, t *series.Table, b *batch, all bool) error {
	var keys []int32
	var parts []time.Time
	var own, next time.Time // the partition of the row before, when it read only that one
	for i := range b.rows {
		s := &b.rows[i]
		// Rows come in runs of one partition: a row within the one
		// before's, without ancestors, reads only that one too.
		if len(s.anc) == 0 && !s.from.Before(own) && !next.Before(s.to) {
			parts = append(parts[:0], own)
		} else if parts = probedPartitions(t, s, parts[:0]); len(parts) == 1 && len(s.anc) == 0 {
			own, next = parts[0], t.Width.Next(parts[0])
		}
		s.probe = all || len(parts) > 1
		if !s.probe {
			continue
		}
		for _, p := range parts {
			if k := int32(p.Unix() / 86400); len(keys) == 0 || keys[len(keys)-1] != k {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	for _, k := range slices.Compact(keys) {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, h.lockKey(t.Name), k); err != nil {
			return err
		}
	}
	return nil
}

// probedPartitions appends to ps the partitions the checks of s read: its
// own, those of its ancestors, and those its interval reaches into.
func probedPartitions(t *series.Table, s *staged, ps []time.Time) []time.Time {
	own := t.Width.Start(s.from)
	ps = append(ps, own)
	for _, a := range s.anc {
		if p := t.Width.Start(a); !slices.ContainsFunc(ps, p.Equal) {
			ps = append(ps, p)
		}
	}
	for p := t.Width.Next(own); p.Before(s.to); p = t.Width.Next(p) {
		ps = append(ps, p)
	}
	return ps
}

// stageColumns returns the staging table's columns for layout l, in COPY
// order: the natural columns, then the layout's own (stageIDs).
func stageColumns(t *series.Table, l layout) []string {
	ids, _ := l.stageIDs()
	return append(append([]string{"row_no", "probe", "anc"}, dataColumns(t, false)...), ids...)
}

// dataColumns returns the columns a write supplies: every column but
// recorded_at, which the database sets. quoted quotes them for SQL.
func dataColumns(t *series.Table, quoted bool) []string {
	cols := []string{"malo_id", "melo_id", "obis_code", "sparte", "from"}
	if t.TimeModel == series.Interval {
		cols = append(cols, "to")
	}
	cols = append(cols, "value", "unit", "quality")
	if t.TimeModel == series.Interval {
		cols = append(cols, "resolution")
	}
	cols = append(cols, "version", "version_scope", "balancing_day", "subject_id")
	for _, c := range t.Columns {
		cols = append(cols, c.Name)
	}
	if quoted {
		for i, c := range cols {
			cols[i] = quote(c)
		}
	}
	return cols
}

// stageDefs returns the staging table's column definitions for layout l.
func stageDefs(t *series.Table, l layout) []string {
	cols := []string{"row_no int4 NOT NULL", "probe bool NOT NULL", "anc timestamptz[]",
		"malo_id text", "melo_id text", "obis_code text", "sparte text", `"from" timestamptz`}
	if t.TimeModel == series.Interval {
		cols = append(cols, `"to" timestamptz`)
	}
	cols = append(cols, "value numeric(18,6)", "unit text", "quality text")
	if t.TimeModel == series.Interval {
		cols = append(cols, "resolution text")
	}
	cols = append(cols, "version numeric(20,0)", "version_scope text", "balancing_day date", "subject_id text")
	for _, c := range t.Columns {
		cols = append(cols, quote(c.Name)+" "+c.ColumnType().String())
	}
	_, ids := l.stageIDs()
	return append(cols, ids...)
}

// stageName returns the name of the staging table of t's column layout
// in table layout l.
func stageName(t *series.Table, l layout) string {
	f := fnv.New64a()
	f.Write([]byte(strings.Join(stageDefs(t, l), ", ")))
	return stagePrefix + strconv.FormatUint(f.Sum64(), 36)
}

func (h *Tier) stageDDL(t *series.Table, l layout) string {
	return `CREATE TEMP TABLE ` + stageName(t, l) + ` (` + strings.Join(stageDefs(t, l), ", ") + `) ON COMMIT DROP`
}

func (h *Tier) insertSQL(t *series.Table, l layout) string {
	return `INSERT INTO ` + h.ident(t.Name) + ` (` + strings.Join(l.writeColumns(t, true), ", ") + `) SELECT ` +
		strings.Join(l.insertSelect(t), ", ") + ` FROM ` + stageName(t, l)
}

// stageSource feeds staged rows to COPY. Values are pointers into the
// rows, and the slice is reused, so a row costs no allocation here.
type stageSource struct {
	t    *series.Table
	l    layout
	rows []staged
	i    int
	vals []any
	// direct feeds the columns the table takes (layout.writeColumns) rather
	// than the staging table's: the rows go straight into the table.
	direct bool
}

func newStageSource(t *series.Table, l layout, rows []staged) *stageSource {
	return &stageSource{t: t, l: l, rows: rows, i: -1, vals: make([]any, 0, len(stageColumns(t, l)))}
}

// Next, Err and Values implement pgx.CopyFromSource.
func (s *stageSource) Next() bool { s.i++; return s.i < len(s.rows) }
func (s *stageSource) Err() error { return nil }

func (s *stageSource) Values() ([]any, error) {
	r := &s.rows[s.i]
	v := s.vals[:0]
	if s.direct {
		return s.l.writeValues(v, s.t, r), nil
	}
	v = append(v, &r.row, &r.probe, &r.anc)
	v = dataValues(v, s.t, r)
	return s.l.stageIDValues(v, r), nil
}

// dataValues appends the values of r's dataColumns to v.
func dataValues(v []any, t *series.Table, r *staged) []any {
	v = append(v, &r.src.MaLo, r.melo, &r.src.OBIS, &r.sparte, &r.from)
	if t.TimeModel == series.Interval {
		v = append(v, &r.to)
	}
	v = append(v, &r.value, &r.unit, &r.quality)
	if t.TimeModel == series.Interval {
		v = append(v, &r.resolution)
	}
	v = append(v, &r.version, &r.src.VersionScope, &r.day, r.subject)
	return append(v, r.extra...)
}

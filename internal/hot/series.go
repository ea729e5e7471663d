package hot

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// A SeriesQuery selects the resolved readings of one series for
// ReadSeries: a market location and OBIS code, identity values, a range
// of from and a recorded_at ceiling.
type SeriesQuery struct {
	MaLo, OBIS string
	// Identity holds values of identity columns, by name; a column not
	// named is not filtered on.
	Identity map[string]string
	// From and To bound from, [From, To); a zero bound is open.
	From, To time.Time
	// KnownAt, if not zero, hides the rows recorded after it before
	// versions are resolved.
	KnownAt time.Time
	// Qualities, if set, keep the resolved readings of these qualities.
	Qualities []metering.Quality
	// Latest keeps only the reading with the latest from.
	Latest bool
	// Beside, if set, returns a scalar subquery of a timestamp that the
	// statement answers too, in its snapshot (SeriesResult.Beside): a
	// caller's read of its own that saves a round trip. arg binds a
	// parameter and returns its placeholder.
	Beside func(arg func(any) string) string
	// Head, if set, returns a scalar subquery of a bigint that the
	// statement answers too, in its snapshot (SeriesResult.Head), as
	// Beside does: the head of the catalog's log, say.
	Head func(arg func(any) string) string
}

// A SeriesResult is what ReadSeries read: the resolved readings and the
// hot floor at the moment they were read.
type SeriesResult struct {
	Readings []series.Reading
	// Detached is the end of the highest partition that was detached when
	// the statement read the rows, zero if none was: every row at or
	// above it was in an attached partition the statement read.
	Detached time.Time
	// Attached is the start of the lowest attached partition above every
	// detached one, zero if there is none: the statement read every row
	// of the table at or above it.
	Attached time.Time
	// Beside is what SeriesQuery.Beside read, if it was set and read a
	// value; HasBeside says so.
	Beside    time.Time
	HasBeside bool
	// Head is what SeriesQuery.Head read, if it was set and read a value;
	// HasHead says so.
	Head    int64
	HasHead bool
}

// genericPlan makes the statements after it in its transaction run on
// their prepared generic plan. PostgreSQL would plan the series statement
// anew on every execution: its generic plan prunes the partitions only
// when it runs, so the planner's estimate counts every partition, and
// planning the custom plan costs as much as running it (issue 46). The
// generic plan looks the series dictionary up by its key all the same.
const genericPlan = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true)`

// GenericPlans makes the connections of cfg run every prepared statement
// on its generic plan, as ReadSeries wants its own to run: a pool so made,
// given as Options.ReadPool, saves each series read the statement that
// asks for it. Meant for a pool of series reads alone.
func GenericPlans(cfg *pgxpool.Config) {
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
}

// startsGeneric reports whether pool's connections start as GenericPlans
// makes them.
func startsGeneric(pool *pgxpool.Pool) bool {
	return pool != nil && pool.Config().ConnConfig.RuntimeParams["plan_cache_mode"] == "force_generic_plan"
}

// querySeries runs the series statement on the reads' connections on its
// generic plan, one round trip: alone where they start on generic plans,
// else after genericPlan in one batch, whose statements share an implicit
// transaction, so that the setting holds for the read alone. done ends
// the exchange.
func (h *Tier) querySeries(ctx context.Context, sql string, args []any) (rows pgx.Rows, done func(), err error) {
	if h.readsGeneric {
		rows, err = h.reads.Query(ctx, sql, args...)
		return rows, func() {}, err
	}
	b := &pgx.Batch{}
	b.Queue(genericPlan)
	b.Queue(sql, args...)
	br := h.reads.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		br.Close()
		return nil, nil, err
	}
	if rows, err = br.Query(); err != nil {
		br.Close()
		return nil, nil, err
	}
	return rows, func() { br.Close() }, nil
}

// ReadSeries returns the readings of t's attached partitions that q
// selects, resolved (per merge key the highest version; the primary key
// makes versions unique), in no order of their own, and the hot floor as the
// same statement saw it. It is one statement, one round trip (with the
// setting genericPlan makes, where the reads' connections do not start
// with it): the floor comes from the snapshot the rows do. The statement locks the parent
// before that snapshot is taken, so a detach either waits for it or
// committed before it, and the floor then says so: its rows are never
// missing unseen (see Floor).
func (h *Tier) ReadSeries(ctx context.Context, t *series.Table, q SeriesQuery) (SeriesResult, error) {
	const op = "read series"
	if err := t.Validate(); err != nil {
		return SeriesResult{}, err
	}
	lay, err := h.layoutOf(ctx, h.reads, t)
	if err != nil {
		return SeriesResult{}, classify(op, t.Name, err)
	}
	sql, args, err := h.seriesSQL(t, lay, q)
	if err != nil {
		return SeriesResult{}, &series.Error{Kind: series.InvalidInput, Op: op, Table: t.Name, Err: err}
	}
	rows, done, err := h.querySeries(ctx, sql, args)
	if err != nil {
		return SeriesResult{}, classify(op, t.Name, err)
	}
	defer done()
	defer rows.Close()
	d := newDecoder(t)
	res := SeriesResult{Readings: make([]series.Reading, 0, expectedReadings(t, q))}
	var (
		names    []string
		attached []bool
		beside   *time.Time
		head     *int64
		floors   int
	)
	// One row of the statement carries the floor, the beside value and
	// the head alone, wherever it comes (present false), every other row
	// a reading alone: nil destinations skip what a row does not carry.
	first := append([]any{&names, &attached, &beside, &head, nil}, make([]any, len(d.dst))...)
	body := append([]any{nil, nil, nil, nil, nil}, d.dst...)
	// from and to crossing as steps are scanned as such and converted.
	type stepped struct {
		seriesStep
		v  int64
		to *time.Time
	}
	var steps []*stepped
	if ss := h.seriesTextOf(t, lay).steps; len(ss) > 0 {
		for i, name := range readNames(t) {
			if st, ok := ss[name]; ok {
				sv := &stepped{seriesStep: st, to: body[5+i].(*time.Time)}
				body[5+i] = &sv.v
				steps = append(steps, sv)
			}
		}
	}
	texts := reuseTexts(rows.FieldDescriptions(), body)
	present := presentOf(rows.FieldDescriptions())
	for rows.Next() {
		if reading, err := present(rows.RawValues()); err != nil {
			return SeriesResult{}, classify(op, t.Name, err)
		} else if !reading {
			if floors++; floors > 1 {
				return SeriesResult{}, classify(op, t.Name, fmt.Errorf("hot: the series statement gave the floor twice"))
			}
			if err := rows.Scan(first...); err != nil {
				return SeriesResult{}, classify(op, t.Name, err)
			}
			continue
		}
		if err := rows.Scan(body...); err != nil {
			return SeriesResult{}, classify(op, t.Name, err)
		}
		if err := texts.scan(rows.RawValues()); err != nil {
			return SeriesResult{}, classify(op, t.Name, err)
		}
		for _, sv := range steps {
			*sv.to = time.UnixMicro((sv.v + sv.add) * sv.micros)
		}
		r, err := d.finish(op)
		if err != nil {
			return SeriesResult{}, err
		}
		res.Readings = append(res.Readings, r)
	}
	if err := rows.Err(); err != nil {
		return SeriesResult{}, classify(op, t.Name, err)
	}
	if floors == 0 {
		return SeriesResult{}, classify(op, t.Name, fmt.Errorf("hot: the series statement gave no floor"))
	}
	var parts []Partition
	for i, name := range names {
		if start, ok := partitionStart(t, name); ok && i < len(attached) {
			parts = append(parts, Partition{Name: name, From: start, To: t.Width.Next(start), Attached: attached[i]})
		}
	}
	res.Detached, res.Attached = floor(parts)
	if beside != nil {
		res.Beside, res.HasBeside = beside.UTC(), true
	}
	if head != nil {
		res.Head, res.HasHead = *head, true
	}
	return res, nil
}

// maxExpected bounds the readings expectedReadings expects.
const maxExpected = 4096

// expectedReadings returns how many readings q may find in t, for the
// slice they are read into: the steps of its range at the one fixed
// resolution t accepts, at most maxExpected; zero where that is unknown.
func expectedReadings(t *series.Table, q SeriesQuery) int {
	if q.Latest {
		return 1
	}
	if len(t.Resolutions) != 1 || q.From.IsZero() || !q.From.Before(q.To) {
		return 0
	}
	step, ok := t.Resolutions[0].Fixed()
	if !ok {
		return 0
	}
	return int(min(q.To.Sub(q.From)/step+1, maxExpected))
}

// seriesSQL returns the statement of ReadSeries and its arguments: the
// resolved readings, and after them in UNION ALL one row of t's
// partitions, which the statement's order puts first, so that a series
// without readings still brings the floor.
func (h *Tier) seriesSQL(t *series.Table, l layout, q SeriesQuery) (string, []any, error) {
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	tx := h.seriesTextOf(t, l)
	// The partitions as Partitions lists them, in the statement's snapshot.
	// Attached looked up per partition by pg_inherits' index on the child,
	// not joined: PostgreSQL scanned pg_inherits whole for each.
	parts := `SELECT coalesce(array_agg(c.relname::text), '{}') AS names,
	coalesce(array_agg(EXISTS (SELECT FROM pg_catalog.pg_inherits i WHERE i.inhrelid = c.oid AND i.inhparent = ` + arg(h.ident(t.Name)) + `::regclass
		AND NOT i.inhdetachpending)), '{}') AS attached
	FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	WHERE n.nspname = ` + arg(h.schema) + ` AND c.relkind = 'r' AND c.relname ~ ` + arg("^"+t.Name+"_p[0-9]{8}$") +
		// The range lets a prepared statement's generic plan, which
		// cannot see the pattern's prefix, read pg_class by its name
		// index rather than whole.
		` AND c.relname >= ` + arg(t.Name+"_p") + `::name AND c.relname < ` + arg(t.Name+"_q") + `::name`
	ident := map[string]string{}
	for _, c := range t.Identity() {
		if v, ok := q.Identity[c.Name]; ok {
			ident[c.Name] = v
		}
	}
	for name := range q.Identity {
		if _, ok := ident[name]; !ok {
			return "", nil, fmt.Errorf("%q is not an identity column of %s", name, t.Name)
		}
	}
	var inner string
	switch l.(type) {
	case dictLayout, leanLayout, stepLayout:
		inner = h.seriesDict(t, l, tx, q, ident, arg)
	default:
		inner = h.seriesRows(t, tx, q, ident, arg)
	}
	outer := `SELECT ` + tx.outer + ` FROM (` + inner + `) r`
	if len(q.Qualities) > 0 {
		qs := make([]string, len(q.Qualities))
		for i, ql := range q.Qualities {
			qs[i] = ql.String()
		}
		outer += ` WHERE r.quality = ANY (` + arg(qs) + `::text[])`
	}
	if q.Latest {
		outer += ` ORDER BY r."from" DESC` + tx.identDesc + ` LIMIT 1`
	}
	beside := `NULL::timestamptz`
	if q.Beside != nil {
		beside = q.Beside(arg) + `::timestamptz`
	}
	head := `NULL::int8`
	if q.Head != nil {
		head = q.Head(arg) + `::int8`
	}
	// The floor once, in a row of its own, rather than beside every
	// reading: a day's 96 readings would carry the partition list 96
	// times, each decoded. No order: sorting the readings and that row
	// took PostgreSQL a sixth of the statement, and the caller orders
	// the readings as it needs them.
	sql := `SELECT NULL::text[] AS names, NULL::bool[] AS attached, NULL::timestamptz AS beside, NULL::int8 AS head, true AS present, r.* FROM (` + outer + `) r` +
		` UNION ALL SELECT d.names, d.attached, ` + beside + `, ` + head + `, false` + tx.nulls + ` FROM (` + parts + `) d`
	return sql, args, nil
}

// A seriesText is what the series statement of a table in a layout
// repeats from read to read, made once (seriesTextOf): the select lists
// and orders, and how from and to cross.
type seriesText struct {
	t *series.Table
	l layout
	// list is the inner statement's select list; recorded is its
	// expression of recorded_at (the dictionary layouts').
	list, recorded string
	// outer is the resolved readings' columns, nulls as many NULLs.
	outer, nulls string
	// identDesc orders by the identity columns of r.
	identDesc string
	// steps are the columns of from and to that cross as stored steps.
	steps map[string]seriesStep
}

// seriesTextOf returns the seriesText of t in layout l, made once per
// table declaration and layout: building its select lists took a tenth
// of serve's time a typed read.
func (h *Tier) seriesTextOf(t *series.Table, l layout) *seriesText {
	if v, ok := h.seriesTexts.Load(t.Name); ok {
		if tx := v.(*seriesText); tx.t == t && tx.l == l {
			return tx
		}
	}
	tx := &seriesText{t: t, l: l, steps: seriesSteps(t, l), recorded: `r.recorded_at`}
	names := readNames(t)
	tx.outer = strings.Join(quoted("r.", names), ", ")
	tx.nulls = strings.Repeat(", NULL", len(names))
	for _, c := range t.Identity() {
		tx.identDesc += `, r.` + quote(c.Name) + ` DESC`
	}
	switch l.(type) {
	case dictLayout, leanLayout, stepLayout:
		src := l.naturalSources(t)
		if e, ok := src["recorded_at"]; ok {
			tx.recorded = e
		}
		// What crosses as stored, for the decoder to convert:
		// PostgreSQL's arithmetic per row costs more than the rest of
		// the row, and is done before the versions are resolved.
		raw := map[string]string{}
		for name, st := range tx.steps {
			raw[name] = `r.` + st.col
		}
		switch l.(type) {
		case leanLayout, stepLayout:
			// Stored less 2⁶³ as int8: as the decoder takes it.
			raw["version"] = `r.version`
		}
		tx.list = strings.Join(naturalList(t, src, raw), ", ")
	default:
		tx.list = strings.Join(naturalList(t, nil, nil), ", ")
	}
	h.seriesTexts.Store(t.Name, tx)
	return tx
}

// readNames are the names of the columns selectList reads, in its order:
// the natural columns, with value and version as the decoder takes them.
func readNames(t *series.Table) []string {
	names := []string{"malo_id", "melo_id", "obis_code", "sparte", "from"}
	if t.TimeModel == series.Interval {
		names = append(names, "to")
	}
	names = append(names, "value", "unit", "quality")
	if t.TimeModel == series.Interval {
		names = append(names, "resolution")
	}
	names = append(names, "version", "version_scope", "recorded_at", "balancing_day", "subject_id")
	for _, c := range t.Columns {
		names = append(names, c.Name)
	}
	return names
}

// seriesRows resolves in the rows layout: the primary key (merge key,
// version) read backwards gives each merge key's highest version first,
// so DISTINCT ON keeps it without a sort.
func (h *Tier) seriesRows(t *series.Table, tx *seriesText, q SeriesQuery, ident map[string]string, arg func(any) string) string {
	where := []string{`malo_id = ` + arg(q.MaLo), `obis_code = ` + arg(q.OBIS)}
	where = append(where, bounds(`"from"`, `recorded_at`, q, arg, func(p string) string { return p })...)
	for _, c := range t.Identity() {
		if v, ok := ident[c.Name]; ok {
			where = append(where, quote(c.Name)+` = `+arg(v)+`::`+c.ColumnType().String())
		}
	}
	key := t.MergeKey()
	desc := make([]string, len(key))
	for i, k := range key {
		desc[i] = quote(k) + ` DESC`
	}
	return `SELECT DISTINCT ON (` + strings.Join(quoted("", key), ", ") + `) ` + tx.list +
		` FROM ` + h.ident(t.Name) + ` WHERE ` + strings.Join(where, " AND ") +
		` ORDER BY ` + strings.Join(desc, ", ") + `, version DESC`
}

// seriesDict resolves in the dictionary layout: the series ids of the
// market location in the buckets of the range, looked up by the series
// dictionary's key (bucket first) where the range is bounded, each joined
// to its rows by the primary key (series, from, version), the attributes
// by theirs. Joined rather than given as an array of ids, so that the
// planner nests the loops over those keys instead of hashing both
// dictionaries whole, which grow with the meters and days held.
func (h *Tier) seriesDict(t *series.Table, l layout, tx *seriesText, q SeriesQuery, ident map[string]string, arg func(any) string) string {
	var where []string
	if bs := buckets(t, q.From, q.To); bs != nil {
		where = append(where, `s.bucket = ANY (`+arg(bs)+`::timestamptz[])`)
	}
	where = append(where, `s.malo_id = `+arg(q.MaLo), `s.obis_code = `+arg(q.OBIS))
	for _, c := range t.Identity() {
		if v, ok := ident[c.Name]; ok {
			where = append(where, `s.`+quote(c.Name)+` = `+arg(v)+`::`+c.ColumnType().String())
		}
	}
	from := `r.` + l.fromColumn()
	where = append(where, bounds(from, tx.recorded, q, arg, func(p string) string { return l.fromExpr(t, p+`::timestamptz`) })...)
	return `SELECT DISTINCT ON (r.series, ` + from + `) ` + tx.list +
		` FROM ` + h.ident(seriesName(t)) + ` s JOIN ` + h.ident(t.Name) + ` r ON r.series = s.id JOIN ` +
		h.ident(attrsName(t)) + ` a ON a.id = r.attr WHERE ` + strings.Join(where, " AND ") +
		` ORDER BY r.series DESC, ` + from + ` DESC, r.version DESC`
}

// A seriesStep says that a series read's column crosses as the stored
// step col, of micros microseconds each, add steps on (timeStepper).
type seriesStep struct {
	col         string
	micros, add int64
}

// seriesSteps returns the columns of from and to, by name, that cross
// as stored steps in layout l (timeStepper); nil where none do.
func seriesSteps(t *series.Table, l layout) map[string]seriesStep {
	ts, ok := l.(timeStepper)
	if !ok {
		return nil
	}
	out := map[string]seriesStep{}
	for _, name := range []string{"from", "to"} {
		if col, micros, add, ok := ts.timeStep(t, name); ok {
			out[name] = seriesStep{col: col, micros: micros, add: add}
		}
	}
	return out
}

// maxBuckets bounds the buckets seriesDict names: a range of more reads
// the series dictionary by market location alone.
const maxBuckets = 1000

// buckets returns the starts of t's partitions that [from, to) meets, nil
// if the range is open or meets more than maxBuckets.
func buckets(t *series.Table, from, to time.Time) []time.Time {
	if from.IsZero() || to.IsZero() || !from.Before(to) {
		return nil
	}
	var out []time.Time
	for b := t.Width.Start(from); b.Before(to); b = t.Width.Next(b) {
		if len(out) == maxBuckets {
			return nil
		}
		out = append(out, b)
	}
	return out
}

// bounds returns the conditions on from and recorded_at of q: from is
// the stored start, which stored(p) is the form of parameter p of.
func bounds(from, recorded string, q SeriesQuery, arg func(any) string, stored func(p string) string) []string {
	var where []string
	if !q.From.IsZero() {
		where = append(where, from+` >= `+stored(arg(q.From)))
	}
	if !q.To.IsZero() {
		where = append(where, from+` < `+stored(arg(q.To)))
	}
	if !q.KnownAt.IsZero() {
		where = append(where, recorded+` <= `+arg(q.KnownAt))
	}
	return where
}

// naturalList returns the select list of the natural columns, named as
// readNames says, of the rows layout's table (src nil) or of a dictionary
// layout's rows r, the columns src names taken from its expressions
// (layout.naturalSources), those raw names from its, unconverted.
func naturalList(t *series.Table, src, raw map[string]string) []string {
	expr := func(name string) string {
		if s, ok := src[name]; ok {
			return s
		}
		if src != nil {
			return "r." + quote(name)
		}
		return quote(name)
	}
	var out []string
	for _, name := range readNames(t) {
		e := expr(name)
		if r, ok := raw[name]; ok {
			out = append(out, r+` AS `+quote(name))
			continue
		}
		switch {
		case name == "value":
			e = `(` + e + ` * 1000000)::int8`
		case name == "version":
			e = `(` + e + ` - ` + versionBias + `)::int8`
		case slices.ContainsFunc(t.Columns, func(c series.Column) bool { return c.Name == name }):
			e += `::text`
		}
		out = append(out, e+` AS `+quote(name))
	}
	return out
}

// quoted returns names quoted, each after prefix.
func quoted(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + quote(n)
	}
	return out
}

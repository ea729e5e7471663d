package hot

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// Scan calls fn for every reading of t that q selects, from the attached
// partitions, in primary key order: by market location, OBIS code, from,
// identity columns and version. Rows stream from the server as fn consumes
// them, so memory stays bounded however many there are. An error from fn
// ends the scan and is returned as is.
func (h *Tier) Scan(ctx context.Context, t *series.Table, q series.Range, fn func(series.Reading) error) error {
	const op = "scan"
	if err := t.Validate(); err != nil {
		return err
	}
	if !q.From.IsZero() && !q.To.IsZero() && !q.From.Before(q.To) {
		return nil
	}
	lay, err := h.layoutOf(ctx, h.pool, t)
	if err != nil {
		return classify(op, t.Name, err)
	}
	sql, args := h.scanSQL(t, lay, q)
	rows, err := h.pool.Query(ctx, sql, args...)
	if err != nil {
		return classify(op, t.Name, err)
	}
	defer rows.Close()
	d := newDecoder(t)
	for rows.Next() {
		r, err := d.decode(op, rows)
		if err != nil {
			return err
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return classify(op, t.Name, rows.Err())
}

// ScanPartition calls fn with the readings of one partition of t, attached
// or detached, chunk at a time in primary key order, in a read-only
// snapshot: memory holds two chunks however large the partition,
// the one fn has and the one read meanwhile. fn must not keep the slice.
// It is how a detached partition, which Scan no longer sees, is read for
// archival.
func (h *Tier) ScanPartition(ctx context.Context, t *series.Table, p Partition, chunk int, fn func([]series.Reading) error) error {
	const op = "scan partition"
	if err := t.Validate(); err != nil {
		return err
	}
	if p.Name != partitionName(t, p.From) || chunk <= 0 {
		return &series.Error{Kind: series.InvalidInput, Op: op, Table: t.Name,
			Err: fmt.Errorf("partition %q from %v, chunk %d: not a partition of the table, or no chunk", p.Name, p.From, chunk)}
	}
	tx, err := h.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return classify(op, t.Name, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	lay, err := h.layoutOf(ctx, tx, t)
	if err != nil {
		return classify(op, t.Name, err)
	}
	sql := `SELECT ` + strings.Join(selectList(t), ", ") + ` FROM ` + lay.natural(h, t, h.ident(p.Name)) + ` n ORDER BY ` + keyList(t, true)
	// One statement whose rows stream as the server makes them, not a
	// cursor: PostgreSQL runs a FETCH to completion before it sends the
	// first row, so the server and this side would take turns.
	// The primary key's index gives the rows in key order as they are
	// read; a sort would read the whole partition before the first row
	// leaves the server, with this side idle meanwhile.
	if _, err := tx.Exec(ctx, `SET LOCAL enable_sort = off`); err != nil {
		return classify(op, t.Name, err)
	}
	rows, err := tx.Query(ctx, sql)
	if err != nil {
		return classify(op, t.Name, err)
	}
	defer rows.Close()
	d := newDecoder(t)
	return prefetch(chunk, fn, func(buf []series.Reading) ([]series.Reading, error) {
		for len(buf) < chunk && rows.Next() {
			r, err := d.decode(op, rows)
			if err != nil {
				return buf, err
			}
			buf = append(buf, r)
		}
		if len(buf) < chunk {
			return buf, classify(op, t.Name, rows.Err())
		}
		return buf, nil
	})
}

// prefetch calls fn with the chunks next fills, up to chunk readings each,
// until one comes back short. next runs on a goroutine of its own, one
// chunk ahead of fn: the server and the decoding produce the next chunk
// while fn consumes this one, instead of each waiting for the other. The
// first error of either ends the scan once next has returned; fn's is
// returned as is.
func prefetch(chunk int, fn func([]series.Reading) error, next func([]series.Reading) ([]series.Reading, error)) error {
	free := make(chan []series.Reading, 2)
	free <- make([]series.Reading, 0, chunk)
	free <- make([]series.Reading, 0, chunk)
	full := make(chan []series.Reading)
	stop := make(chan struct{})
	var nerr error
	go func() {
		defer close(full)
		for {
			var buf []series.Reading
			select {
			case buf = <-free:
			case <-stop:
				return
			}
			buf, nerr = next(buf[:0])
			if nerr != nil {
				return
			}
			if len(buf) > 0 {
				select {
				case full <- buf:
				case <-stop:
					return
				}
			}
			if len(buf) < chunk {
				return
			}
		}
	}()
	for buf := range full {
		if err := fn(buf); err != nil {
			close(stop)
			for range full {
			}
			return err
		}
		free <- buf
	}
	return nerr
}

// A decoder turns rows selected with selectList into readings.
type decoder struct {
	t                                 *series.Table
	r                                 series.Reading
	sparte, unit, quality, resolution string
	value, version                    int64
	melo, subject                     *string
	day                               time.Time
	extra                             []*string
	dst                               []any
	codes                             *codeCache
}

func newDecoder(t *series.Table) *decoder {
	d := &decoder{t: t, extra: make([]*string, len(t.Columns)), codes: newCodeCache()}
	d.dst = []any{&d.r.MaLo, &d.melo, &d.r.OBIS, &d.sparte, &d.r.From}
	if t.TimeModel == series.Interval {
		d.dst = append(d.dst, &d.r.To)
	}
	d.dst = append(d.dst, &d.value, &d.unit, &d.quality)
	if t.TimeModel == series.Interval {
		d.dst = append(d.dst, &d.resolution)
	}
	d.dst = append(d.dst, &d.version, &d.r.VersionScope, &d.r.RecordedAt, &d.day, &d.subject)
	for i := range d.extra {
		d.dst = append(d.dst, &d.extra[i])
	}
	return d
}

func (d *decoder) decode(op string, rows pgx.Rows) (series.Reading, error) {
	if err := rows.Scan(d.dst...); err != nil {
		return series.Reading{}, classify(op, d.t.Name, err)
	}
	return d.finish(op)
}

// finish returns the reading of the values the last Scan into d.dst
// left.
func (d *decoder) finish(op string) (series.Reading, error) {
	out := d.r
	out.From, out.RecordedAt = d.r.From.UTC(), d.r.RecordedAt.UTC()
	if d.t.TimeModel == series.Interval {
		out.To = d.r.To.UTC()
	}
	out.MeLo, out.Subject = deref(d.melo), deref(d.subject)
	out.Value, out.Version = series.Decimal(d.value), unbias(d.version)
	out.BalancingDay = metering.Date{Year: d.day.Year(), Month: d.day.Month(), Day: d.day.Day()}
	var err error
	if out.Commodity, err = d.codes.commodity(d.sparte); err == nil {
		if out.Unit, err = d.codes.unit(d.unit); err == nil {
			if out.Quality, err = d.codes.quality(d.quality); err == nil && d.t.TimeModel == series.Interval {
				out.Resolution, err = d.codes.resolution(d.resolution)
			}
		}
	}
	if err != nil {
		// The CHECK constraints admit only known codes.
		return series.Reading{}, &series.Error{Kind: series.InvariantViolation, Op: op, Table: d.t.Name, Err: fmt.Errorf("stored row: %w", err)}
	}
	if len(d.extra) > 0 {
		out.Extra = make(map[string]string, len(d.extra))
		for i, c := range d.t.Columns {
			if d.extra[i] != nil {
				out.Extra[c.Name] = *d.extra[i]
			}
		}
	}
	return out, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// selectList is the column list the decoder reads, in its order.
func selectList(t *series.Table) []string {
	cols := []string{"malo_id", "melo_id", "obis_code", "sparte", `"from"`}
	if t.TimeModel == series.Interval {
		cols = append(cols, `"to"`)
	}
	cols = append(cols, "(value * 1000000)::int8", "unit", "quality")
	if t.TimeModel == series.Interval {
		cols = append(cols, "resolution")
	}
	cols = append(cols, "(version - "+versionBias+")::int8", "version_scope", "recorded_at", "balancing_day", "subject_id")
	for _, c := range t.Columns {
		cols = append(cols, quote(c.Name)+"::text")
	}
	return cols
}

func (h *Tier) scanSQL(t *series.Table, l layout, q series.Range) (string, []any) {
	cols := selectList(t)
	var where []string
	var args []any
	arg := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	// Conditions are added only when set, so the bounds reach the planner
	// as plain comparisons it prunes partitions with: on the stored rows,
	// where the layout derives from.
	rel := h.ident(t.Name)
	if l.columnExpr(t, "from") == "" {
		if !q.From.IsZero() {
			arg(`"from" >= $%d`, q.From)
		}
		if !q.To.IsZero() {
			arg(`"from" < $%d`, q.To)
		}
	} else if !q.From.IsZero() || !q.To.IsZero() {
		var stored []string
		if !q.From.IsZero() {
			stored = append(stored, l.fromColumn()+` >= `+l.fromLit(t, q.From))
		}
		if !q.To.IsZero() {
			stored = append(stored, l.fromColumn()+` < `+l.fromLit(t, q.To))
		}
		rel = `(SELECT * FROM ` + rel + ` WHERE ` + strings.Join(stored, " AND ") + `)`
	}
	if len(q.MaLo) > 0 {
		arg(`malo_id = ANY ($%d)`, q.MaLo)
	}
	if len(q.OBIS) > 0 {
		arg(`obis_code = ANY ($%d)`, q.OBIS)
	}
	sql := `SELECT ` + strings.Join(cols, ", ") + ` FROM ` + l.natural(h, t, rel) + ` n`
	if len(where) > 0 {
		sql += ` WHERE ` + strings.Join(where, " AND ")
	}
	return sql + ` ORDER BY ` + keyList(t, true), args
}

// Natural returns a FROM item, to be given an alias, that reads t's
// attached readings with their natural columns (malo_id, obis_code, unit,
// version_scope, ...) whatever t's layout: for plain SQL over the tier,
// such as a benchmark comparing what two tables store.
func (h *Tier) Natural(ctx context.Context, t *series.Table) (string, error) {
	if err := t.Validate(); err != nil {
		return "", err
	}
	l, err := h.layoutOf(ctx, h.pool, t)
	if err != nil {
		return "", classify("natural", t.Name, err)
	}
	return l.natural(h, t, h.ident(t.Name)), nil
}

// codeCache parses the few distinct code spellings of a scan once each.
type codeCache struct {
	commodities map[string]metering.Commodity
	units       map[string]metering.Unit
	qualities   map[string]metering.Quality
	resolutions map[string]metering.Resolution
}

func newCodeCache() *codeCache {
	return &codeCache{map[string]metering.Commodity{}, map[string]metering.Unit{},
		map[string]metering.Quality{}, map[string]metering.Resolution{}}
}

func cached[T any](m map[string]T, s string, parse func(string) (T, error)) (T, error) {
	if v, ok := m[s]; ok {
		return v, nil
	}
	v, err := parse(s)
	if err == nil {
		m[s] = v
	}
	return v, err
}

func (c *codeCache) commodity(s string) (metering.Commodity, error) {
	return cached(c.commodities, s, metering.ParseCommodity)
}
func (c *codeCache) unit(s string) (metering.Unit, error) {
	return cached(c.units, s, metering.ParseUnit)
}
func (c *codeCache) quality(s string) (metering.Quality, error) {
	return cached(c.qualities, s, metering.ParseQuality)
}
func (c *codeCache) resolution(s string) (metering.Resolution, error) {
	return cached(c.resolutions, s, metering.ParseResolution)
}

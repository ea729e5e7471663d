package archive

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/metering"
)

// The hot tier scans only attached partitions, so the rows of a detached
// one are read here, with the hot tier's encoding: value in millionths,
// version biased onto int8, codes as text.

// versionBias maps numeric(20,0) versions onto int8, as the hot tier does.
const versionBias = "9223372036854775808"

func unbias(v int64) uint64 { return uint64(v) ^ 1<<63 }

// readPartition calls fn for every reading of the detached partition name
// of t, in primary key order, fetching chunk rows at a time through a
// cursor: memory holds one chunk, however large the partition. A detached
// partition is immutable, so one transaction sees all of it.
func readPartition(ctx context.Context, pool *pgxpool.Pool, schema string, t *hot.Table, name string, chunk int, fn func([]hot.Reading) error) error {
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `DECLARE meterstore_archive NO SCROLL CURSOR FOR `+selectSQL(schema, t, name)); err != nil {
		return err
	}
	fetch := fmt.Sprintf(`FETCH FORWARD %d FROM meterstore_archive`, chunk)
	d := newDecoder(t)
	buf := make([]hot.Reading, 0, chunk)
	for {
		rows, err := tx.Query(ctx, fetch)
		if err != nil {
			return err
		}
		buf = buf[:0]
		for rows.Next() {
			r, err := d.decode(rows)
			if err != nil {
				rows.Close()
				return err
			}
			buf = append(buf, r)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(buf) == 0 {
			return nil
		}
		if err := fn(buf); err != nil {
			return err
		}
		if len(buf) < chunk {
			return nil
		}
	}
}

// countPartition returns the number of rows of partition name.
func countPartition(ctx context.Context, pool *pgxpool.Pool, schema, name string) (int64, error) {
	var n int64
	err := pool.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, name}.Sanitize()).Scan(&n)
	return n, err
}

// selectSQL returns the query of every row of partition name of t, in
// primary key order, with the columns decoder expects.
func selectSQL(schema string, t *hot.Table, name string) string {
	cols := []string{"malo_id", "melo_id", "obis_code", "sparte", `"from"`}
	if t.TimeModel == hot.Interval {
		cols = append(cols, `"to"`)
	}
	cols = append(cols, "(value * 1000000)::int8", "unit", "quality")
	if t.TimeModel == hot.Interval {
		cols = append(cols, "resolution")
	}
	cols = append(cols, "(version - "+versionBias+")::int8", "version_scope", "recorded_at", "balancing_day", "subject_id")
	key := []string{"malo_id", "obis_code", `"from"`}
	for _, c := range t.Columns {
		cols = append(cols, pgx.Identifier{c.Name}.Sanitize()+"::text")
		if c.Identity {
			key = append(key, pgx.Identifier{c.Name}.Sanitize())
		}
	}
	key = append(key, "version")
	return `SELECT ` + strings.Join(cols, ", ") + ` FROM ` + pgx.Identifier{schema, name}.Sanitize() +
		` ORDER BY ` + strings.Join(key, ", ")
}

// A decoder turns rows of selectSQL into readings.
type decoder struct {
	t                                 *hot.Table
	r                                 hot.Reading
	sparte, unit, quality, resolution string
	value, version                    int64
	melo, subject                     *string
	day                               time.Time
	extra                             []*string
	dst                               []any
}

func newDecoder(t *hot.Table) *decoder {
	d := &decoder{t: t, extra: make([]*string, len(t.Columns))}
	d.dst = []any{&d.r.MaLo, &d.melo, &d.r.OBIS, &d.sparte, &d.r.From}
	if t.TimeModel == hot.Interval {
		d.dst = append(d.dst, &d.r.To)
	}
	d.dst = append(d.dst, &d.value, &d.unit, &d.quality)
	if t.TimeModel == hot.Interval {
		d.dst = append(d.dst, &d.resolution)
	}
	d.dst = append(d.dst, &d.version, &d.r.VersionScope, &d.r.RecordedAt, &d.day, &d.subject)
	for i := range d.extra {
		d.dst = append(d.dst, &d.extra[i])
	}
	return d
}

func (d *decoder) decode(rows pgx.Rows) (hot.Reading, error) {
	if err := rows.Scan(d.dst...); err != nil {
		return hot.Reading{}, err
	}
	out := d.r
	out.From, out.RecordedAt = d.r.From.UTC(), d.r.RecordedAt.UTC()
	if d.t.TimeModel == hot.Interval {
		out.To = d.r.To.UTC()
	}
	out.MeLo, out.Subject = deref(d.melo), deref(d.subject)
	out.Value, out.Version = hot.Decimal(d.value), unbias(d.version)
	out.BalancingDay = metering.Date{Year: d.day.Year(), Month: d.day.Month(), Day: d.day.Day()}
	var err error
	if out.Commodity, err = metering.ParseCommodity(d.sparte); err == nil {
		if out.Unit, err = metering.ParseUnit(d.unit); err == nil {
			if out.Quality, err = metering.ParseQuality(d.quality); err == nil && d.t.TimeModel == hot.Interval {
				out.Resolution, err = metering.ParseResolution(d.resolution)
			}
		}
	}
	if err != nil {
		// The CHECK constraints admit only known codes.
		return hot.Reading{}, &InvariantError{Table: d.t.Name, Reason: fmt.Sprintf("stored row with an unknown code: %v", err)}
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

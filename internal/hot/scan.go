package hot

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/meterstore/meterstore/metering"
)

// A Query selects the readings Scan returns.
type Query struct {
	// From and To bound the readings' From to [From, To); a zero bound is
	// open. Tiering routes on From, so the bounds prune partitions.
	From, To time.Time
	// MaLo and OBIS, if not empty, keep only readings with one of the
	// given market location ids and OBIS codes.
	MaLo []string
	OBIS []string
}

// Scan calls fn for every reading of t that q selects, from the attached
// partitions, in primary key order: by market location, OBIS code, from,
// identity columns and version. Rows stream from the server as fn consumes
// them, so memory stays bounded however many there are. An error from fn
// ends the scan and is returned as is.
func (h *Tier) Scan(ctx context.Context, t *Table, q Query, fn func(Reading) error) error {
	const op = "scan"
	if err := t.Validate(); err != nil {
		return err
	}
	if !q.From.IsZero() && !q.To.IsZero() && !q.From.Before(q.To) {
		return nil
	}
	sql, args := h.scanSQL(t, q)
	rows, err := h.pool.Query(ctx, sql, args...)
	if err != nil {
		return classify(op, t.Name, err)
	}
	defer rows.Close()
	var (
		r                                 Reading
		sparte, unit, quality, resolution string
		value, version                    int64
		melo, subject                     *string
		day                               time.Time
		extra                             = make([]*string, len(t.Columns))
		dst                               = []any{&r.MaLo, &melo, &r.OBIS, &sparte, &r.From}
		codes                             = newCodeCache()
	)
	if t.TimeModel == Interval {
		dst = append(dst, &r.To)
	}
	dst = append(dst, &value, &unit, &quality)
	if t.TimeModel == Interval {
		dst = append(dst, &resolution)
	}
	dst = append(dst, &version, &r.VersionScope, &r.RecordedAt, &day, &subject)
	for i := range extra {
		dst = append(dst, &extra[i])
	}
	for rows.Next() {
		if err := rows.Scan(dst...); err != nil {
			return classify(op, t.Name, err)
		}
		out := r
		out.From, out.RecordedAt = r.From.UTC(), r.RecordedAt.UTC()
		if t.TimeModel == Interval {
			out.To = r.To.UTC()
		}
		out.MeLo, out.Subject = deref(melo), deref(subject)
		out.Value, out.Version = Decimal(value), unbias(version)
		out.BalancingDay = metering.Date{Year: day.Year(), Month: day.Month(), Day: day.Day()}
		if out.Commodity, err = codes.commodity(sparte); err == nil {
			if out.Unit, err = codes.unit(unit); err == nil {
				if out.Quality, err = codes.quality(quality); err == nil && t.TimeModel == Interval {
					out.Resolution, err = codes.resolution(resolution)
				}
			}
		}
		if err != nil {
			// The CHECK constraints admit only known codes.
			return &Error{Kind: InvariantViolation, Op: op, Table: t.Name, Err: fmt.Errorf("stored row: %w", err)}
		}
		if len(extra) > 0 {
			out.Extra = make(map[string]string, len(extra))
			for i, c := range t.Columns {
				if extra[i] != nil {
					out.Extra[c.Name] = *extra[i]
				}
			}
		}
		if err := fn(out); err != nil {
			return err
		}
	}
	return classify(op, t.Name, rows.Err())
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (h *Tier) scanSQL(t *Table, q Query) (string, []any) {
	cols := []string{"malo_id", "melo_id", "obis_code", "sparte", `"from"`}
	if t.TimeModel == Interval {
		cols = append(cols, `"to"`)
	}
	cols = append(cols, "(value * 1000000)::int8", "unit", "quality")
	if t.TimeModel == Interval {
		cols = append(cols, "resolution")
	}
	cols = append(cols, "(version - "+versionBias+")::int8", "version_scope", "recorded_at", "balancing_day", "subject_id")
	for _, c := range t.Columns {
		cols = append(cols, quote(c.Name)+"::text")
	}
	var where []string
	var args []any
	arg := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	// Conditions are added only when set, so the bounds reach the planner
	// as plain comparisons it prunes partitions with.
	if !q.From.IsZero() {
		arg(`"from" >= $%d`, q.From)
	}
	if !q.To.IsZero() {
		arg(`"from" < $%d`, q.To)
	}
	if len(q.MaLo) > 0 {
		arg(`malo_id = ANY ($%d)`, q.MaLo)
	}
	if len(q.OBIS) > 0 {
		arg(`obis_code = ANY ($%d)`, q.OBIS)
	}
	sql := `SELECT ` + strings.Join(cols, ", ") + ` FROM ` + h.ident(t.Name)
	if len(where) > 0 {
		sql += ` WHERE ` + strings.Join(where, " AND ")
	}
	return sql + ` ORDER BY ` + keyList(t, true), args
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

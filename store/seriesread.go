package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// Typed reads of one series: the resolved readings of a market location
// and OBIS code over a time range, its latest reading, and the intervals
// the calendar expects that it lacks. They run through the same engine,
// authorisation-free read options (as of, known at, read mode) and
// parameters as SQL, and return typed values, so that a Go program needs
// no SQL of its own for the common reads.

// A SeriesQuery selects one series of a table and a range of it.
type SeriesQuery struct {
	// MaLo is the market location, checked for its check digit.
	MaLo string
	// OBIS is the OBIS code, in any spelling ParseOBIS takes.
	OBIS string
	// From and To bound the interval starts read, [From, To); a zero
	// bound is open.
	From, To time.Time
	// Qualities, if set, keep the readings of these qualities only.
	Qualities []metering.Quality
	// Identity gives the values of identity columns the series is kept
	// apart by, by name; a column not given is not filtered on.
	Identity map[string]string
	// Resolution is the grid Gaps expects; zero means the table's only
	// accepted resolution.
	Resolution metering.Resolution
	// Read chooses the state and the tiers read.
	Read ReadOptions
}

// A Gap is an interval [From, To) the calendar expects of a series and no
// reading of it covers.
type Gap struct {
	From, To time.Time
}

// MaxGapIntervals bounds the intervals Gaps expects in one call: a decade
// of quarter hours.
const MaxGapIntervals = 10 * 366 * 100

// SeriesReadings returns the resolved readings of the series q selects in
// table name, by interval start: per merge key the winning version, as
// readings has it.
func (s *Store) SeriesReadings(ctx context.Context, name string, q SeriesQuery) ([]Reading, error) {
	return s.seriesRead(ctx, name, q, `ORDER BY "from"`)
}

// LatestReading returns the reading of the series q selects in table name
// with the latest interval start, and false if it has none in q's range.
func (s *Store) LatestReading(ctx context.Context, name string, q SeriesQuery) (Reading, bool, error) {
	rs, err := s.seriesRead(ctx, name, q, `ORDER BY "from" DESC LIMIT 1`)
	if err != nil || len(rs) == 0 {
		return Reading{}, false, err
	}
	return rs[0], true, nil
}

// Gaps returns the intervals of q's range, which must be bounded, that the
// calendar expects of the series at q's resolution and no reading of it
// covers: every step of a fixed resolution, every balancing day (06:00 to
// 06:00 for gas) of a day's. It refuses a range of more than
// MaxGapIntervals intervals.
func (s *Store) Gaps(ctx context.Context, name string, q SeriesQuery) ([]Gap, error) {
	t, err := s.table(name)
	if err != nil {
		return nil, err
	}
	if q.From.IsZero() || q.To.IsZero() || !q.From.Before(q.To) {
		return nil, fmt.Errorf("store: gaps of %s: want a bounded range, From before To", name)
	}
	r := q.Resolution
	if r == 0 {
		rs := t.decl.AcceptedResolutions()
		if len(rs) != 1 {
			return nil, fmt.Errorf("store: gaps of %s: the table accepts %d resolutions; name one", name, len(rs))
		}
		r = rs[0]
	}
	cal, err := metering.NewCalendar()
	if err != nil {
		return nil, err
	}
	com := t.decl.Commodity
	if com == 0 {
		com = metering.Electricity
	}
	// The first interval of the grid at or after From.
	slot := cal.BalancingDayStart(cal.BalancingDay(q.From, com), com)
	if step, ok := r.Fixed(); ok {
		slot = q.From.Truncate(step)
	}
	for slot.Before(q.From) {
		slot = cal.Next(slot, r)
	}
	var slots []time.Time
	for ; slot.Before(q.To); slot = cal.Next(slot, r) {
		if len(slots) == MaxGapIntervals {
			return nil, fmt.Errorf("store: gaps of %s: more than %d intervals of %s from %s to %s; ask for a shorter range",
				name, MaxGapIntervals, r, q.From.UTC().Format(time.RFC3339), q.To.UTC().Format(time.RFC3339))
		}
		slots = append(slots, slot)
	}
	rs, err := s.SeriesReadings(ctx, name, q)
	if err != nil {
		return nil, err
	}
	covered := make(map[int64]bool, len(rs))
	for _, rd := range rs {
		covered[rd.From.UnixMicro()] = true
	}
	var gaps []Gap
	for _, sl := range slots {
		if covered[sl.UnixMicro()] {
			continue
		}
		end := cal.Next(sl, r)
		if n := len(gaps); n > 0 && gaps[n-1].To.Equal(sl) {
			gaps[n-1].To = end // one gap of consecutive intervals
			continue
		}
		gaps = append(gaps, Gap{From: sl, To: end})
	}
	return gaps, nil
}

// seriesRead runs the read of q over table name with the order clause
// tail, its values bound as parameters, and decodes the rows.
func (s *Store) seriesRead(ctx context.Context, name string, q SeriesQuery, tail string) ([]Reading, error) {
	t, err := s.table(name)
	if err != nil {
		return nil, err
	}
	malo, err := metering.ParseMaLo(q.MaLo)
	if err != nil {
		return nil, &series.Error{Kind: series.InvalidInput, Op: "read series", Table: name, Err: err}
	}
	obis, err := metering.ParseOBIS(q.OBIS)
	if err != nil {
		return nil, &series.Error{Kind: series.InvalidInput, Op: "read series", Table: name, Err: err}
	}
	decl := t.decl
	interval := decl.TimeModel == series.Interval
	cols := []string{"malo_id", "melo_id", "obis_code", "sparte", `"from"`}
	if interval {
		cols = append(cols, `"to"`)
	}
	cols = append(cols, "CAST(value * 1000000 AS BIGINT)", "unit", "quality")
	if interval {
		cols = append(cols, "resolution")
	}
	cols = append(cols, "CAST(version AS UBIGINT)", "version_scope", "recorded_at", "balancing_day", "subject_id")
	for _, c := range decl.Columns {
		cols = append(cols, "CAST("+quoteIdent(c.Name)+" AS VARCHAR)")
	}
	params := []any{malo.String(), obis.String()}
	where := []string{"malo_id = $1", "obis_code = $2"}
	arg := func(cond string, v any) {
		params = append(params, v)
		where = append(where, fmt.Sprintf(cond, len(params)))
	}
	if !q.From.IsZero() {
		arg(`"from" >= $%d`, q.From)
	}
	if !q.To.IsZero() {
		arg(`"from" < $%d`, q.To)
	}
	if len(q.Qualities) > 0 {
		in := make([]string, len(q.Qualities))
		for i, ql := range q.Qualities {
			params = append(params, ql.String())
			in[i] = fmt.Sprintf("$%d", len(params))
		}
		where = append(where, "quality IN ("+strings.Join(in, ", ")+")")
	}
	for _, c := range decl.Columns {
		if v, ok := q.Identity[c.Name]; ok && c.Identity {
			arg(quoteIdent(c.Name)+` = $%d`, v)
		}
	}
	sql := `SELECT ` + strings.Join(cols, ", ") + ` FROM ` + quoteIdent(name) + `.readings WHERE ` +
		strings.Join(where, " AND ") + ` ` + tail
	st, err := s.Prepare(ctx, sql, StatementOptions{Read: q.Read, Params: params})
	if err != nil {
		return nil, err
	}
	res, err := st.Query(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Reading, 0, len(res.Rows))
	for _, row := range res.Rows {
		r, err := decodeReading(decl, row)
		if err != nil {
			return nil, fmt.Errorf("store: read series of %s: %w", name, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// decodeReading makes a Reading of a row of seriesRead's columns.
func decodeReading(t *series.Table, row []any) (Reading, error) {
	var r Reading
	i := 0
	next := func() any { v := row[i]; i++; return v }
	text := func() string { s, _ := next().(string); return s }
	instant := func() time.Time { ts, _ := next().(time.Time); return ts.UTC() }
	var err error
	r.MaLo, r.MeLo, r.OBIS = text(), text(), text()
	if r.Commodity, err = metering.ParseCommodity(text()); err != nil {
		return r, err
	}
	r.From = instant()
	if t.TimeModel == series.Interval {
		r.To = instant()
	}
	v, ok := next().(int64)
	if !ok {
		return r, fmt.Errorf("value of %T", row[i-1])
	}
	r.Value = series.Decimal(v)
	if r.Unit, err = metering.ParseUnit(text()); err != nil {
		return r, err
	}
	if r.Quality, err = metering.ParseQuality(text()); err != nil {
		return r, err
	}
	if t.TimeModel == series.Interval {
		if r.Resolution, err = metering.ParseResolution(text()); err != nil {
			return r, err
		}
	}
	if r.Version, ok = next().(uint64); !ok {
		return r, fmt.Errorf("version of %T", row[i-1])
	}
	r.VersionScope, r.RecordedAt = text(), instant()
	day := instant()
	r.BalancingDay = metering.Date{Year: day.Year(), Month: day.Month(), Day: day.Day()}
	r.Subject = text()
	if len(t.Columns) > 0 {
		r.Extra = make(map[string]string, len(t.Columns))
		for _, c := range t.Columns {
			if s, ok := next().(string); ok {
				r.Extra[c.Name] = s
			}
		}
	}
	return r, nil
}

// quoteIdent quotes an identifier for DuckDB.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
